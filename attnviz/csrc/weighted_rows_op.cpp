// The C kernel (weighted_rows.c) as a PyTorch operator: torch.ops.attnviz.weighted_rows(x, w).
//
//     out[b, :] = sum over t of w[b, t] * x[b, t, :]        x: (B, T, H), w: (B, T) -> (B, H)
//
// Why an operator: at 0.5-1 MiB in L2 the kernel reads x in 5-10 us, and a call from Python
// through ctypes spent ~3.5 us more around it (a dozen checks, the output tensor, the plan, the
// pointers: ~0.1 us each on the Python side). Here the same checks are a few nanoseconds and
// the call costs about what any PyTorch op does (~1.5 us), so the kernel keeps its speed at
// small sizes (attnviz/native_op.py builds and loads this file).
//
// The answer is None (an undefined tensor) wherever the kernel does not apply, and the caller
// then takes the Python path (attnviz.native.try_weighted_rows), which also works out the plan:
//   - not float32, not on the CPU, x not (B, T, H) and contiguous, w not (B, T);
//   - autograd wants a gradient (this kernel has none);
//   - no plan yet for this shape and thread count: plans are made in Python (attnviz.native.plan,
//     one source of truth), and handed over with set_plan the first time a shape is seen.
// Registered as a CompositeImplicitAutograd kernel (the def with a function): it runs above
// autograd, for tensors of any device, and says None rather than raising.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

extern "C" void weighted_rows_f32(const float *x, const float *w, float *out, float *partial,
                                  const long *shape);
extern "C" int weighted_rows_abi(void);

namespace {

struct Plan {
  std::array<long, 7> shape;  // {B, T, H, group, split, threads, mode}: the kernel's argument
  int64_t split;              // partial sums per sentence (B, split, H) when > 1
};

struct Key {
  int64_t b, t, h, threads;
  bool operator==(const Key &o) const {
    return b == o.b && t == o.t && h == o.h && threads == o.threads;
  }
};

struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t s = std::hash<int64_t>()(k.b);
    for (int64_t v : {k.t, k.h, k.threads}) s = s * 1000003u ^ std::hash<int64_t>()(v);
    return s;
  }
};

constexpr size_t MAX_PLANS = 1024;  // a visitor trying every shape fills it; it is then emptied
std::mutex plans_lock;
std::unordered_map<Key, Plan, KeyHash> plans;

at::Tensor weighted_rows(const at::Tensor &x, const at::Tensor &w) {
  if (x.scalar_type() != at::kFloat || w.scalar_type() != at::kFloat) return {};
  if (!x.device().is_cpu() || !w.device().is_cpu()) return {};
  if (x.dim() != 3 || w.dim() != 2 || !x.is_contiguous()) return {};
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  if (w.size(0) != b || w.size(1) != t) return {};
  if (at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) return {};
  Plan plan;
  {
    std::lock_guard<std::mutex> guard(plans_lock);
    auto it = plans.find(Key{b, t, h, at::get_num_threads()});
    if (it == plans.end()) return {};
    plan = it->second;
  }
  const at::Tensor wc = w.is_contiguous() ? w : w.contiguous();  // (B,T)
  at::Tensor out = at::empty({b, h}, x.options());                // (B,H)
  at::Tensor partial = plan.split > 1 ? at::empty({b, plan.split, h}, x.options()) : out;
  weighted_rows_f32(x.data_ptr<float>(), wc.data_ptr<float>(), out.data_ptr<float>(),
                    partial.data_ptr<float>(), plan.shape.data());
  return out;
}

// The plan for (B, T, H) on `threads` threads, as attnviz.native works it out: `shape` is the
// kernel's argument {B, T, H, group, split, threads used, mode}, `split` the partial sums.
void set_plan(int64_t threads, at::IntArrayRef shape, int64_t split) {
  TORCH_CHECK(shape.size() == 7, "set_plan: shape has 7 entries, got ", shape.size());
  TORCH_CHECK(shape[5] >= 1 && split >= 1, "set_plan: threads and split are at least 1");
  Plan plan{{}, split};
  for (size_t i = 0; i < 7; i++) plan.shape[i] = static_cast<long>(shape[i]);
  std::lock_guard<std::mutex> guard(plans_lock);
  if (plans.size() >= MAX_PLANS) plans.clear();
  plans[Key{shape[0], shape[1], shape[2], threads}] = plan;
}

// Forget every plan (after the plan's limits change: tests, a new cache size).
void clear_plans() {
  std::lock_guard<std::mutex> guard(plans_lock);
  plans.clear();
}

int64_t plan_count() {
  std::lock_guard<std::mutex> guard(plans_lock);
  return static_cast<int64_t>(plans.size());
}

int64_t kernel_abi() { return weighted_rows_abi(); }

}  // namespace

TORCH_LIBRARY(attnviz, m) {
  m.def("weighted_rows(Tensor x, Tensor w) -> Tensor", &weighted_rows);
  m.def("set_plan(int threads, int[] shape, int split) -> ()", &set_plan);
  m.def("clear_plans() -> ()", &clear_plans);
  m.def("plan_count() -> int", &plan_count);
  m.def("kernel_abi() -> int", &kernel_abi);
}
