/* Issue 32, twentieth round: the kernel's software prefetch in other forms (prefetch_kinds.diff:
 * -DPF_LOC=3/2/0 for prefetcht0/t1/nta, -DPREFETCH_BYTES=1024/4096, -DPF_BOTH for both lines of a
 * step), best of 300 blocks of 10 calls against read_floats (mode 1, or RMODE), plain C, one thread.
 *
 *   prefetch_kinds B T COLS H HOW [OUT_AT]
 *
 * sum_rows on each of B sentences of T rows, H numbers apart, COLS of them summed, `how` as the
 * kernel's mode bits (| 4 asks ahead); out OUT_AT bytes into a 4 KiB page (commands.sh: 640).
 */
#define _ISOC11_SOURCE
/* micro: sum_rows with a row stride apart from cols */
#include "weighted_rows.c"
#include "read_floats.c"
#include <stdio.h>
#include <time.h>
#include <string.h>
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
int main(int argc,char**argv){
  long b=atol(argv[1]),t=atol(argv[2]),cols=atol(argv[3]),h=atol(argv[4]); int how=atoi(argv[5]);
  long outat=argc>6?atol(argv[6]):-1; int rmode=getenv("RMODE")?atoi(getenv("RMODE")):1;
  long n=b*t*h;
  float*buf=aligned_alloc(4096,(n*4+8191)/4096*4096); float*x=buf+32;
  float*w=malloc(b*t*4); char*op=aligned_alloc(4096,b*h*4+8192); float*out=outat>=0?(float*)(op+outat):(float*)(op+1024+64*3);
  srand(1); for(long i=0;i<n;i++)x[i]=(float)rand()/RAND_MAX-0.5f; for(long i=0;i<b*t;i++)w[i]=(float)rand()/RAND_MAX;
  long useful=b*t*cols; double best[2]={1e9,1e9}; volatile double sink=0;
  for(int r=0;r<300;r++){ for(int k=0;k<2;k++){ double t0=now(); for(int c=0;c<10;c++){
     if(k==0) sink+=read_floats(x,useful,useful,1,rmode); else for(long s=0;s<b;s++) sum_rows(x+s*t*h,w+s*t,out+s*h,t,h,cols,how);}
     double dt=now()-t0; if(dt<best[k])best[k]=dt;}}
  printf("b%ld t%ld cols%ld h%ld how%d: read %.1f GB/s  kernel/read %.3f\n",b,t,cols,h,how,10.0*useful*4/best[0]/1e9,best[0]/best[1]);
}
