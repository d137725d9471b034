/* Issue 32, twentieth round: where the fused kernel's time goes at 16 MiB (half the L3), plain C,
 * one thread, medians of 300 blocks of 10 calls, each way in turn every round (commands.sh builds
 * it beside attnviz/csrc's files: it includes the kernel and the read loop).
 *
 *   stream_layout B T H
 *
 * Prints each way's median and the floor's median over it:
 *   regs    the kernel's streams (four stripes a sentence), its step, no weights, sums in registers;
 *   flat    the same, each stripe read as one run (no loop per row);
 *   read-in-sentence-units  read_floats (mode 0) in units of one sentence: four streams of T/4 rows;
 *   floor   read_floats (mode 0) on all of x, the read limit;
 *   kernel  weighted_rows_f32 as the library plans one thread (group B, mode 0);
 *   sumrows-one-place  sum_rows sentence by sentence, every sentence's sums at one place.
 */
#define _ISOC11_SOURCE
#include <stdlib.h>
#include "weighted_rows.c"
#include "read_floats.c"
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double med(double*v,int n){double*c=malloc(n*sizeof(double));memcpy(c,v,n*sizeof(double));qsort(c,n,sizeof(double),cmp);double m=c[n/2];free(c);return m;}
/* four streams per sentence (as the kernel's stripes), x in sentences of t*h; sums in L1 (kind 1) or registers only (kind 0) */
static float sums[4096] __attribute__((aligned(4096)));
static double rd(const float*x,long b,long t,long h,int kind){
  double s=0; const long st=t/4, d=st*h;
  for(long q=0;q<b;q++){ const float*xs=x+q*t*h;
   for(long j0=0;j0<h;j0+=h){ 
    vecf a0={0},a1={0};
    for(long i=0;i<st;i++){ const vecfu*r0=(const vecfu*)(xs+i*h),*r1=r0+d/VL,*r2=r1+d/VL,*r3=r2+d/VL;
      vecfu*va=(vecfu*)(sums+1024);
      for(long v=0;v<h/VL;v+=2){
        vecf b0=(r0[v]+r1[v])+(r2[v]+r3[v]); vecf b1=(r0[v+1]+r1[v+1])+(r2[v+1]+r3[v+1]);
        if(kind==1){ va[v]+=b0; va[v+1]+=b1; } else if(kind==2){ a0+=b0; a1+=b1; va[v]+=a0; } else { a0+=b0; a1+=b1; }
      } if(kind==6) break; }
    if(kind==6){ const vecfu*r0=(const vecfu*)xs,*r1=r0+d/VL,*r2=r1+d/VL,*r3=r2+d/VL; for(long v=0;v<d/VL;v+=2){ vecf b0=(r0[v]+r1[v])+(r2[v]+r3[v]); vecf b1=(r0[v+1]+r1[v+1])+(r2[v+1]+r3[v+1]); a0+=b0; a1+=b1; } }
    for(int k=0;k<VL;k++) s+=a0[k]+a1[k];
   } }
  return s+sums[1024];
}
int main(int argc,char**argv){
  long b=atol(argv[1]),t=atol(argv[2]),h=atol(argv[3]),n=b*t*h;
  float*x=aligned_alloc(4096,(n*4+8191)/4096*4096); for(long i=0;i<n;i++)x[i]=1.0f;
  enum{R=300}; static double tm[6][R]; float*w=malloc(b*t*4); for(long i=0;i<b*t;i++)w[i]=0.5f; float*out=malloc(b*h*4); long sh[7]={b,t,h,b,1,1,0}; float*out2=aligned_alloc(4096,b*h*4+8192); volatile double sink=0;
  for(int r=0;r<R;r++){ for(int k=0;k<6;k++){ double t0=now(); for(int c=0;c<10;c++){ if(k==3) sink+=read_floats(x,n,n,1,0); else if(k==1) sink+=rd(x,b,t,h,6); else if(k==4) weighted_rows_f32(x,w,out,0,sh); else if(k==5) { for(long q=0;q<b;q++) sum_rows(x+q*t*h,w+q*t,out2+2048,t,h,h,0);} else if(k==2) sink+=read_floats(x,n,t*h,1,0); else sink+=rd(x,b,t,h,k);} tm[k][r]=now()-t0; } }
  printf("%ldx%ldx%ld medians us: regs %.1f  flat %.1f  read-in-sentence-units %.1f  floor %.1f  -> ratio regs %.3f flat %.3f sent-units %.3f kernel %.3f sumrows-one-place %.3f\n",b,t,h,med(tm[0],R)*1e5,med(tm[1],R)*1e5,med(tm[2],R)*1e5,med(tm[3],R)*1e5, med(tm[3],R)/med(tm[0],R), med(tm[3],R)/med(tm[1],R), med(tm[3],R)/med(tm[2],R), med(tm[3],R)/med(tm[4],R), med(tm[3],R)/med(tm[5],R));
}
