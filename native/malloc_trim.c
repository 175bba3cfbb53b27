// Gives a worker's freed malloc memory back to the system: glibc's
// malloc_trim(0) releases the free pages inside its heaps, not only at their
// top (lib/worker/heap-trim.js calls it on a timer). A worker storing tens of
// thousands of messages a second frees large buffers in an order that leaves
// holes no later allocation fills, and its resident set grows by them.
#include <node_api.h>
#include <malloc.h>

#ifndef __GLIBC__
#error "malloc_trim(3) is glibc's; this C library has none (the workers then run without it)"
#endif

// trim(): true when memory was given back.
static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value released;
  napi_get_boolean(env, malloc_trim(0) == 1, &released);
  return released;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
