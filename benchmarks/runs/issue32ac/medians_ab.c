/* Issue 32, twenty-third round: runs/issue32aa/medians_ab.c with its outputs 4 KiB-aligned, as
 * PyTorch's are at least 64-byte aligned (the streamed stores of long_sentences.h need whole
 * lines; malloc's large blocks start 16 bytes past a page). The twenty-first round's words:
 * two kernel trees (A and B, weighted_rows.c built twice with its
 * entry points renamed: commands.sh) against the read limit, plain C, one process: each round one
 * block of 3 calls of A, of B and of each of the read limit's three ways (four streams and four
 * asking ahead in units of 4 MiB, as attnviz/native_read.py reads from DRAM; one stream, a unit a
 * thread, as it reads in the cache), in an order reversed every other round. The floor is the
 * way with the lowest median (as attnviz.bench keeps it); printed: the median over rounds of the
 * floor's time over each kernel's. Both kernels are first checked against a float64 reference.
 *
 *   medians_ab B T H GROUP SPLIT THREADS MODE_A MODE_B [ROUNDS]
 *
 * (the kernel's shape argument as attnviz.native plans it; MODE_B for B's call) */
#define _ISOC11_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
double read_floats(const float *x, long n, long unit, int threads, int mode);
void wr_a(const float *x, const float *w, float *out, float *partial, const long *shape);
void wr_b(const float *x, const float *w, float *out, float *partial, const long *shape);
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){double*c=malloc(n*sizeof(double));memcpy(c,v,n*sizeof(double));qsort(c,n,sizeof(double),cmp);double m=c[n/2];free(c);return m;}
int main(int argc,char**argv){
  long sa[7],sb[7]; for(int i=0;i<7;i++) sa[i]=sb[i]=atol(argv[1+i]); sb[6]=atol(argv[8]);
  int R=argc>9?atoi(argv[9]):30, C=3; long unit=argc>10?atol(argv[10]):(1L<<20);
  long b=sa[0],t=sa[1],h=sa[2],n=b*t*h; int th=(int)sa[5];
  float*x=aligned_alloc(4096,(n*4+4095)/4096*4096),*w=malloc(b*t*4),*oa=aligned_alloc(4096,(b*h*4+4095)/4096*4096),*ob=aligned_alloc(4096,(b*h*4+4095)/4096*4096),*p=malloc(b*h*4*(sa[4]>1?sa[4]:1)+64);
  srand(7); for(long i=0;i<n;i++)x[i]=(float)rand()/RAND_MAX-0.5f; for(long i=0;i<b*t;i++)w[i]=(float)rand()/RAND_MAX;
  wr_a(x,w,oa,p,sa); wr_b(x,w,ob,p,sb);
  /* check both against float64 */
  double err=0,big=0; for(long s=0;s<b;s++) for(long j=0;j<h;j++){ double r=0; for(long k=0;k<t;k++) r+=(double)w[s*t+k]*x[(s*t+k)*h+j]; big=fmax(big,fabs(r)); err=fmax(err,fmax(fabs(oa[s*h+j]-r),fabs(ob[s*h+j]-r))); }
  if(err>1e-4*big*sqrt((double)t)) { printf("WRONG %g\n", err/big); return 1; }
  double ta[R],tb[R],r0[R],r2[R],r1[R]; long u1=(n+th-1)/th; volatile double sink=0;
  for(int r=0;r<R;r++){ int o=r&1;
    for(int k=0;k<5;k++){ int which=o?4-k:k; double t0=now(); for(int c=0;c<C;c++) switch(which){
      case 0: wr_a(x,w,oa,p,sa); break; case 1: wr_b(x,w,ob,p,sb); break;
      case 2: sink+=read_floats(x,n,unit,th,0); break; case 3: sink+=read_floats(x,n,unit,th,2); break; case 4: sink+=read_floats(x,n,u1,th,1); break; }
      double d=(now()-t0)/C; if(which==0)ta[r]=d; else if(which==1)tb[r]=d; else if(which==2)r0[r]=d; else if(which==3) r2[r]=d; else r1[r]=d; } }
  double *fl = med(r0,R)<=med(r2,R)? r0:r2; if(med(r1,R)<med(fl,R)) fl=r1; double qa[R],qb[R]; for(int r=0;r<R;r++){qa[r]=fl[r]/ta[r]; qb[r]=fl[r]/tb[r];}
  printf("%ldx%ldx%ld th%d modes %ld/%ld: floor %.1f GB/s (%s)  A %.3f  B %.3f  (A %.0f us, B %.0f us)\n",b,t,h,th,sa[6],sb[6], n*4/med(fl,R)/1e9, fl==r0?"four":fl==r2?"ahead":"one", med(qa,R), med(qb,R), med(ta,R)*1e6, med(tb,R)*1e6);
}
