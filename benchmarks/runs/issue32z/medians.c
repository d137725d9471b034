/* Issue 32, twentieth round: one kernel tree against the read limit, plain C, one process, the
 * median of 400 rounds of blocks of 10 calls (not the fastest block, as pair_kernels.sh keeps):
 * the kernel with its plan (B T H GROUP SPLIT THREADS MODE, as native.call_plan gives it), the
 * read limit's four streams (mode 0) and, as "alt", one stream (mode 1; with U=NUMBERS in the
 * environment, four streams in units of that many numbers), then the kernel with MODE2 if given.
 * Prints each median and the median over rounds of the faster read's time over the kernel's.
 * commands.sh builds it beside a tree's attnviz/csrc files (it includes the kernel's source).
 *
 *   medians B T H GROUP SPLIT THREADS MODE [MODE2]
 */
#define _ISOC11_SOURCE
#include "weighted_rows.c"
#include "read_floats.c"
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){double*c=malloc(n*sizeof(double));memcpy(c,v,n*sizeof(double));qsort(c,n,sizeof(double),cmp);double m=c[n/2];free(c);return m;}
int main(int argc,char**argv){
  long sh[7]; for(int i=0;i<7;i++) sh[i]=atol(argv[1+i]); long sh2[7]; memcpy(sh2,sh,sizeof sh);
  if(argc>8) sh2[6]=atol(argv[8]);
  long b=sh[0],t=sh[1],h=sh[2],n=b*t*h; int th=(int)sh[5];
  long unit = th==1? n : ((n+th-1)/th+255)/256*256;
  float*x=aligned_alloc(4096,(n*4+8191)/4096*4096); float*w=malloc(b*t*4); float*out=malloc(b*h*4); float*part=malloc(b*h*4*(sh[4]>1?sh[4]:1));
  srand(1); for(long i=0;i<n;i++)x[i]=(float)rand()/RAND_MAX-0.5f; for(long i=0;i<b*t;i++)w[i]=(float)rand()/RAND_MAX;
  enum{R=400}; static double tk[R],tk2[R],tr0[R],tr1[R]; volatile double sink=0;
  for(int r=0;r<R;r++){ double t0=now(); for(int c=0;c<10;c++) weighted_rows_f32(x,w,out,part,sh); double t1=now();
    for(int c=0;c<10;c++) sink+=read_floats(x,n,unit,th,0); double t2=now(); for(int c=0;c<10;c++) sink+=read_floats(x,n,getenv("U")?atol(getenv("U")):unit,th,getenv("U")?0:1); double t3=now();
    for(int c=0;c<10;c++) weighted_rows_f32(x,w,out,part,sh2); double t4=now();
    tk[r]=t1-t0; tr0[r]=t2-t1; tr1[r]=t3-t2; tk2[r]=t4-t3; }
  double ratio[R], ratio2[R]; for(int r=0;r<R;r++){ double f=tr0[r]<tr1[r]?tr0[r]:tr1[r]; ratio[r]=f/tk[r]; ratio2[r]=f/tk2[r]; }
  printf("%ldx%ldx%ld th%d mode %ld/%ld: medians us kernel %.1f kernel2 %.1f four %.1f alt %.1f | paired median ratio %.3f  (mode2 %.3f)\n", b,t,h,th,sh[6],sh2[6], med(tk,R)*1e5, med(tk2,R)*1e5, med(tr0,R)*1e5, med(tr1,R)*1e5, med(ratio,R), med(ratio2,R));
}
