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
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/Allocator.h>
#include <c10/core/InferenceMode.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

extern "C" void weighted_rows_f32(const float *x, const float *w, float *out, float *partial,
                                  const long *shape);
extern "C" int weighted_rows_abi(void);
extern "C" double read_floats(const float *x, long n, long unit, int threads, int mode);

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
std::atomic<uint64_t> plans_changed{0};  // counts the changes of `plans`, made under plans_lock

// Each thread's last plan found, and what `plans_changed` counted then: a call on the shape of
// the last one (a benchmark, a page's repeated runs) takes neither the lock nor the hash map
struct LastPlan {
  uint64_t changes = ~uint64_t{0};
  Key key{};
  Plan plan{};
};
thread_local LastPlan last_plan;

bool find_plan(const Key &key, Plan &plan) {
  LastPlan &last = last_plan;
  if (last.changes == plans_changed.load(std::memory_order_acquire) && last.key == key) {
    plan = last.plan;
    return true;
  }
  std::lock_guard<std::mutex> guard(plans_lock);
  auto it = plans.find(key);
  if (it == plans.end()) return false;
  plan = it->second;
  last = {plans_changed.load(std::memory_order_relaxed), key, plan};
  return true;
}

void plans_change() { plans_changed.fetch_add(1, std::memory_order_release); }  // under plans_lock

// The outputs' memory: blocks that come back when their tensor dies are kept for the next call.
//
// Why: in L2 a call takes 4-15 us, and a fresh output from the CPU allocator (posix_memalign,
// then free) cost 0.26-0.33 us of it more than a block kept here (measured: the kernel into a
// new output against into a kept one, two threads, 0.5-1 MiB; benchmarks/RESULTS.md). A block
// comes back only through its storage's deleter, when no tensor, view or storage uses it any more,
// so a result is never handed out twice while anything can still read it. At most KEPT_BLOCKS
// blocks of at most KEPT_BYTES each are kept (2 MiB a process at most); the oldest goes first.
// Each block has the size it was made for in a header just before its (64-byte aligned) data.
// Outputs made here are not reported to torch.profiler's memory profile.
constexpr size_t HEADER = 64;
constexpr size_t KEPT_BLOCKS = 8;
constexpr size_t KEPT_BYTES = size_t{256} << 10;

struct Kept {
  std::mutex lock;
  size_t count = 0;
  std::array<char *, KEPT_BLOCKS> blocks{};  // the oldest first; each points at its header
};

Kept &kept() {  // never destroyed: a tensor may die after the program's static destructors ran
  static Kept *const k = new Kept;
  return *k;
}

size_t block_size(const char *header) { return *reinterpret_cast<const size_t *>(header); }

void drop_block(void *data) {
  if (data == nullptr) return;
  char *header = static_cast<char *>(data) - HEADER;
  char *spill = header;  // what is freed: this block, or the oldest kept one when all are taken
  if (block_size(header) <= KEPT_BYTES) {
    Kept &k = kept();
    std::lock_guard<std::mutex> guard(k.lock);
    if (k.count == KEPT_BLOCKS) {
      spill = k.blocks[0];
      std::copy(k.blocks.begin() + 1, k.blocks.end(), k.blocks.begin());
      k.count--;
    } else {
      spill = nullptr;
    }
    k.blocks[k.count++] = header;
  }
  std::free(spill);
}

char *take_block(size_t size) {  // a kept block of exactly `size` bytes, the newest, or null
  if (size > KEPT_BYTES) return nullptr;
  Kept &k = kept();
  std::lock_guard<std::mutex> guard(k.lock);
  for (size_t i = k.count; i-- > 0;) {
    char *header = k.blocks[i];
    if (block_size(header) == size) {
      std::copy(k.blocks.begin() + i + 1, k.blocks.begin() + k.count, k.blocks.begin() + i);
      k.count--;
      return header;
    }
  }
  return nullptr;
}

// Blocks of HUGE_FROM bytes and more start on a 2 MiB line and are advised for transparent huge
// pages. glibc maps every allocation this large afresh and unmaps it when freed (its mmap threshold
// rises no further than 32 MiB), so each call's output is paged in by faults: one per 4 KiB page
// without the advice, one per 2 MiB with it (8192x4x1024, one thread: 25 ms a call, 11 ms with it;
// attnviz/large_outputs.py does the same on the ctypes path; PyTorch does it for all of its
// allocations under THP_MEM_ALLOC_ENABLE=1). The pages are then paged in here, by this thread,
// before the kernel runs: its threads take units of rows as they come free, so both wrote into
// the same fresh huge page at once, and such calls took 8-104 ms on our 2-vCPU VM (16384x2x1024,
// quartiles 8-31 ms); paged in first, 11-15 ms (4 KiB pages: 23-40 ms; paged in by both threads,
// each a run of pages of its own, no faster: benchmarks/runs/issue32ae/parallel_python.txt). The
// advice is only advice: where it fails or Linux gives no huge pages, the block pages in as
// before. The builtin makes such outputs without the GIL (64 MiB take milliseconds to page in).
constexpr size_t HUGE_PAGE = size_t{2} << 20;
constexpr size_t HUGE_FROM = size_t{32} << 20;

char *fresh_block(size_t bytes) {
  if (bytes < HUGE_FROM) return static_cast<char *>(std::aligned_alloc(64, bytes));
  const size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;  // its last page whole
  char *block = static_cast<char *>(std::aligned_alloc(HUGE_PAGE, whole));
  if (block == nullptr) return nullptr;
#ifdef MADV_HUGEPAGE
  madvise(block, whole, MADV_HUGEPAGE);
#endif
  for (size_t at = 0; at < whole; at += HUGE_PAGE) static_cast<volatile char *>(block)[at] = 0;
  return block;
}

struct KeptAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const c10::Device cpu(c10::kCPU);
    if (n == 0) return {nullptr, nullptr, &drop_block, cpu};
    const size_t size = (n + 63) / 64 * 64;
    char *header = take_block(size);
    if (header == nullptr) {
      header = fresh_block(HEADER + size);
      if (header == nullptr) throw std::bad_alloc();
      *reinterpret_cast<size_t *>(header) = size;
    }
    char *data = header + HEADER;
    return {data, data, &drop_block, cpu};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &drop_block; }
  void copy_data(void *dest, const void *src, size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

KeptAllocator kept_allocator;

// a contiguous float32 CPU tensor, as at::empty makes one, its memory from kept_allocator
at::Tensor empty_kept(at::IntArrayRef size) {
  return at::detail::empty_generic(size, &kept_allocator, c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   at::kFloat, std::nullopt);
}

// {blocks kept, their bytes}: for the tests
std::vector<int64_t> kept_blocks() {
  Kept &k = kept();
  std::lock_guard<std::mutex> guard(k.lock);
  int64_t bytes = 0;
  for (size_t i = 0; i < k.count; i++) bytes += static_cast<int64_t>(block_size(k.blocks[i]));
  return {static_cast<int64_t>(k.count), bytes};
}

// the plan for x and w, where the kernel applies to them (else false: the caller answers None)
bool applies(const at::Tensor &x, const at::Tensor &w, Plan &plan) {
  if (x.scalar_type() != at::kFloat || w.scalar_type() != at::kFloat) return false;
  if (!x.device().is_cpu() || !w.device().is_cpu()) return false;
  if (x.dim() != 3 || w.dim() != 2 || !x.is_contiguous()) return false;
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  if (w.size(0) != b || w.size(1) != t) return false;
  if (at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) return false;
  return find_plan(Key{b, t, h, at::get_num_threads()}, plan);
}

// Room for the partial sums of a call that cuts sentences into pieces ((B, split, H) numbers),
// where they are few: the calling thread's own, kept between its calls (a tensor for them each
// call took two locks and a TensorImpl, ~0.2-0.3 us of a 7 us call on one sentence in L2 on two
// threads). More numbers than SCRATCH_NUMEL: null, and the caller makes a tensor as before.
constexpr size_t SCRATCH_NUMEL = 1 << 14;  // 64 KiB a thread at most

float *scratch(size_t numel) {
  struct Freed {
    void operator()(float *p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Freed> room;
  if (numel > SCRATCH_NUMEL) return nullptr;
  if (!room) room.reset(static_cast<float *>(std::aligned_alloc(64, SCRATCH_NUMEL * 4)));
  return room.get();  // null where the allocation failed: the caller makes a tensor
}

// out (B, H), contiguous float32 = the weighted sums of x's rows, as planned
void run(const at::Tensor &x, const at::Tensor &w, const Plan &plan, const at::Tensor &out) {
  at::Tensor wc, partial;  // a contiguous copy of w, if w is not; the partial sums, if any
  if (!w.is_contiguous()) wc = w.contiguous();
  float *o = out.data_ptr<float>(), *p = o;
  if (plan.split > 1) {
    p = scratch(static_cast<size_t>(x.size(0) * plan.split * x.size(2)));
    if (p == nullptr) {
      partial = empty_kept({x.size(0), plan.split, x.size(2)});
      p = partial.data_ptr<float>();
    }
  }
  weighted_rows_f32(x.data_ptr<float>(), (wc.defined() ? wc : w).data_ptr<float>(), o, p,
                    plan.shape.data());
}

at::Tensor weighted_rows(const at::Tensor &x, const at::Tensor &w) {
  Plan plan;
  if (!applies(x, w, plan)) return {};
  // made as at::empty makes a CPU tensor, without a second trip through the dispatcher
  at::Tensor out = empty_kept({x.size(0), x.size(2)});  // (B,H)
  run(x, w, plan, out);
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
  plans_change();
}

// Forget every plan (after the plan's limits change: tests, a new cache size).
void clear_plans() {
  std::lock_guard<std::mutex> guard(plans_lock);
  plans.clear();
  plans_change();
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
  m.def("kept_blocks() -> int[]", &kept_blocks);
}

#ifdef ATTNVIZ_PYTHON_ENTRY
// The same function as a plain Python builtin, attnviz_weighted_rows_op.weighted_rows(x, w), where
// the build finds Python's headers and torch's Python library (attnviz/native_op.py: it is then
// what fused calls). A call through torch.ops is boxed by the dispatcher (~1.2 us before the
// function runs, measured: a call answered None at once); this one unpacks the two tensors and
// wraps the result (~0.6 us with the output's allocation). Cold after a kernel that streamed the
// caches full, the difference was 2-4 us a call: 3-6% of a call on 8 MiB, a quarter of one on
// 0.75 MiB.
#include <Python.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/object_ptr.h>

namespace {

// Below this many numbers a call holds the GIL: at most ~20-40 us, against the 5 ms Python lets a
// thread run before it asks for the GIL (sys.getswitchinterval), and a release and a take of the
// GIL cost ~0.3 us. Above it the GIL is released while the loop runs, as torch.ops does.
constexpr int64_t KEEP_GIL_NUMEL = 1 << 20;

// Outputs kept with their Python objects, for the next call of their size (outputs of at most
// KEPT_BYTES, REUSED of them, the newest last; guarded by the GIL). A loop that drops each
// result (a benchmark, a page's runs, `for ...: y = fused(x, w)`) then gets back the tensor it
// dropped: no TensorImpl, storage or Python object is made or freed. Made and freed, they cost
// ~0.2 us a call (measured at 1x4x16, nothing to read: ~0.45 us a call with a new output, ~0.25
// with the dropped one again, as much as the floor's read; torch lets go of the GIL and takes it
// back when one dies). In L2, on calls of 4-6 us, rows on the 64-byte lines went from medians of
// 0.82-0.90 of the read limit to 0.89-0.96 (benchmarks/RESULTS.md, eleventh round).
//
// An output is taken again only when nothing but this list can see it (``unread``): its
// Python object has no other reference, no weak reference and no attribute; its TensorImpl and
// storage are referenced by that object alone (no view, storage object or NumPy array of it);
// it is as it was made (size, strides, memory, dispatch keys, inference or not; no autograd
// metadata: nothing set requires_grad, a grad or a hook). Anything else gets a new output. A
// dropped output kept here lives on (a weak reference made before its drop still answers) until
// it is taken again or REUSED newer ones push it out. Where Python does not say where an
// object's weak references are (tp_weaklistoffset: 3.12 manages them itself), none is reused.
constexpr size_t REUSED = 4;

struct Reused {
  PyObject *object;       // a strong reference
  c10::DispatchKeySet keys;  // the tensor's dispatch keys when made
};

std::array<Reused, REUSED> &reused() {  // never destroyed: Python may be gone by then
  static auto *const r = new std::array<Reused, REUSED>{};
  return *r;
}

// nothing but this list reads `object` (a kept output), and it is still a (b, h) output made here
bool unread(const Reused &kept, int64_t b, int64_t h) {
  PyObject *const object = kept.object;
  // its attributes: the dict was made when it was kept (keep), so no Python code runs here
  PyObject *dict = PyObject_GenericGetDict(object, nullptr);
  if (dict == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool attributes = PyDict_Size(dict) != 0;
  Py_DECREF(dict);
  if (attributes || Py_REFCNT(object) != 1 || !THPVariable_CheckExact(object)) return false;
  const Py_ssize_t weak = Py_TYPE(object)->tp_weaklistoffset;  // where its weak references are,
  if (weak <= 0) return false;                                  // if Python says
  if (*reinterpret_cast<PyObject **>(reinterpret_cast<char *>(object) + weak) != nullptr)
    return false;
  const at::Tensor &t = THPVariable_Unpack(object);
  // a holder in C++ (a DLPack capsule, a saved tensor): torch 2.13 also counts it in the Python
  // object's references, so this is a second look, kept in case it stops doing so
  if (t.use_count() != 1 || t.weak_use_count() != 1) return false;
  if (t.key_set() != kept.keys || t.unsafeGetTensorImpl()->autograd_meta() != nullptr)
    return false;
  if (t.is_inference() != c10::InferenceMode::is_enabled()) return false;  // as made here now
  if (t.scalar_type() != at::kFloat || t.dim() != 2 || t.size(0) != b || t.size(1) != h ||
      t.stride(0) != h || t.stride(1) != 1 || t.storage_offset() != 0)
    return false;
  const c10::Storage &storage = t.storage();
  return storage.use_count() == 1 && storage.data_ptr().get_deleter() == &drop_block &&
         storage.nbytes() == static_cast<size_t>(b * h) * sizeof(float);
}

// a new reference to a kept (b, h) output that nothing reads, now the newest; or null
PyObject *take_unread(int64_t b, int64_t h) {
  auto &list = reused();
  for (size_t i = REUSED; i-- > 0;) {
    if (list[i].object == nullptr || !unread(list[i], b, h)) continue;
    const Reused taken = list[i];
    std::copy(list.begin() + i + 1, list.end(), list.begin() + i);
    list[REUSED - 1] = taken;
    Py_INCREF(taken.object);
    return taken.object;
  }
  return nullptr;
}

// keep `object` (a new output) as the newest; the oldest is let go
void keep(PyObject *object) {
  const at::Tensor &t = THPVariable_Unpack(object);
  if (t.storage().nbytes() > KEPT_BYTES) return;
  // its attribute dict made now, before the list changes: making it may run Python code (the
  // garbage collector, a __del__ that calls this again), which ``unread`` then never does
  PyObject *dict = PyObject_GenericGetDict(object, nullptr);
  if (dict == nullptr) {
    PyErr_Clear();
    return;
  }
  Py_DECREF(dict);
  auto &list = reused();
  PyObject *const oldest = list[0].object;
  std::copy(list.begin() + 1, list.end(), list.begin());  // the list is whole before the
  Py_INCREF(object);                                      // oldest's drop runs any code
  list[REUSED - 1] = {object, t.key_set()};
  Py_XDECREF(oldest);
}

PyObject *py_weighted_rows(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "weighted_rows(x, w) takes two tensors");
    return nullptr;
  }
  // plain tensors only: a subclass (or anything else) is answered None, and the caller then
  // takes the path that honours it
  if (!THPVariable_CheckExact(args[0]) || !THPVariable_CheckExact(args[1])) Py_RETURN_NONE;
  const at::Tensor &x = THPVariable_Unpack(args[0]);
  const at::Tensor &w = THPVariable_Unpack(args[1]);
  Plan plan;
  if (!applies(x, w, plan)) Py_RETURN_NONE;
  const int64_t b = x.size(0), h = x.size(2);
  THPObjectPtr object(take_unread(b, h));
  // the kept one by reference: a copy would count one more owner in C++, for which torch takes a
  // reference to its Python object, and drops it again with the copy
  const at::Tensor *kept = object ? &THPVariable_Unpack(object.get()) : nullptr;
  at::Tensor made;  // a new output, where no kept one is free
  if (x.numel() < KEEP_GIL_NUMEL) {  // a few microseconds: releasing the GIL would cost more
    if (!kept) made = empty_kept({b, h});
    run(x, w, plan, kept ? *kept : made);
  } else {  // a new output made here too: a large one takes milliseconds to page in (fresh_block)
    pybind11::gil_scoped_release no_gil;
    if (!kept) made = empty_kept({b, h});
    run(x, w, plan, kept ? *kept : made);
  }
  if (!object) {
    object = THPObjectPtr(THPVariable_Wrap(std::move(made)));
    if (!object) return nullptr;
    keep(object.get());
  }
  return object.release();
  END_HANDLE_TH_ERRORS
}

// read_floats(x, numel, unit, threads, mode) -> float: the read limit's loop (weighted_rows.c) on
// x, a contiguous float32 CPU tensor of numel numbers, planned by the caller (native_op.reader):
// the floor is called as leanly as the kernel, or the kernel's leaner call would seem to beat it
PyObject *py_read_floats(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 5 || !THPVariable_CheckExact(args[0])) {
    PyErr_SetString(PyExc_TypeError, "read_floats(x, numel, unit, threads, mode): x a tensor");
    return nullptr;
  }
  const at::Tensor &x = THPVariable_Unpack(args[0]);
  const long n = PyLong_AsLong(args[1]), unit = PyLong_AsLong(args[2]);
  const long threads = PyLong_AsLong(args[3]), mode = PyLong_AsLong(args[4]);
  if (PyErr_Occurred()) return nullptr;
  if (x.scalar_type() != at::kFloat || !x.device().is_cpu() || !x.is_contiguous() ||
      x.numel() != n || threads < 1 || threads > 1 << 16) {
    PyErr_SetString(PyExc_ValueError, "read_floats: x is not numel contiguous float32 numbers");
    return nullptr;
  }
  const float *data = x.data_ptr<float>();
  const int used = static_cast<int>(threads), how = static_cast<int>(mode);
  if (n < KEEP_GIL_NUMEL) return PyFloat_FromDouble(read_floats(data, n, unit, used, how));
  double sum = 0.0;
  {
    pybind11::gil_scoped_release no_gil;
    sum = read_floats(data, n, unit, used, how);
  }
  return PyFloat_FromDouble(sum);
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"read_floats", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_read_floats)),
     METH_FASTCALL, "read_floats(x, numel, unit, threads, mode): the read limit's loop"},
    {"weighted_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_weighted_rows)),
     METH_FASTCALL, "weighted_rows(x, w): torch.ops.attnviz.weighted_rows without the dispatcher"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "attnviz_weighted_rows_op", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit_attnviz_weighted_rows_op(void) {
  PyObject *m = PyModule_Create(&module);
  if (m != nullptr && PyModule_AddIntConstant(m, "REUSED", REUSED) != 0) Py_CLEAR(m);
  return m;  // REUSED: for the tests
}
#endif
