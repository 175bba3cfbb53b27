// A UDP receive path for the LoadBalancer master that is cheaper per
// datagram than node:dgram. dgram makes one recvmsg() call, one Buffer and
// one call into JavaScript per datagram; here a libuv poll handle wakes on
// readable, recvmmsg() takes up to VLEN datagrams per system call, and they
// are packed into one caller-owned buffer in the master's batch format
//   u32 dataLength | u16 port | u8 addressLength | f64 receivedAt |
//   address (text) | data
// (big-endian; lib/shared/batch-codec.js), handed to JavaScript once per
// buffer, not once per datagram. receivedAt is the epoch ms (with its
// fraction) at which the kernel received the datagram (SO_TIMESTAMPNS), so
// that a datagram's arrival is not moved by the time it waited in the
// socket buffer: a hold-off below, a busy event loop.
//
// Exports:
//   bind(host, port, ipv6, recvBufferSize, reusePort) -> handle (throws an
//     Error with code/errno/syscall on failure); reusePort sets SO_REUSEPORT
//     before bind, so that each worker of receive 'reuseport' binds the port
//     and the kernel spreads datagrams among them by 4-tuple
//   start(handle, out: Buffer, onBatch(count, bytes), onError(err), holdoffMs)
//   address(handle) -> { address, family, port }
//   stats(handle) -> { truncated, wakeups, syscalls, holdoffs, kernelDrops }
//     kernelDrops: datagrams the kernel discarded for this socket (its
//     receive buffer was full), read with SO_MEMINFO (the socket's sk_drops;
//     the last value read before close after it). SO_RXQ_OVFL would report
//     the same counter, but only on the next datagram queued, so a burst
//     lost while the master was stalled would show only when traffic
//     resumed.
//   drain(handle, limit) -> datagrams read from the queue now (before close)
//
// Hold-off: a receiver faster than its traffic wakes for every second
// datagram, and each wake-up (epoll, recvmmsg, a call into JavaScript)
// costs more than the datagrams it brings. So after a wake-up that found
// the queue short (fewer than VLEN), polling pauses for holdoffMs and the
// kernel buffer collects the next datagrams, provided what is expected to
// arrive meanwhile at the measured rate fills at most a quarter of the
// receive buffer the kernel granted, and that buffer is at least 1 MiB.
// holdoffMs 0 turns it off.
//   close(handle)
//   layout: ENTRY_LAYOUT, the batch entry layout written (lib/shared/
//     batch-codec.js ENTRY_LAYOUT): an addon built before is not loaded
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#define VLEN 64
#define SLOT_BYTES 65536
#define ENTRY_LAYOUT 2
#define HEADER 15
#define TIME_AT 7
// Room for the one control message asked for: the kernel's receive time.
#define CONTROL_BYTES CMSG_SPACE(sizeof(struct timespec))
#define ADDRESS_MAX INET6_ADDRSTRLEN
// Datagrams handed over per wake-up at most, so acknowledgements from the
// workers and timers still get their turn under a flood.
#define BUDGET 8192
// The arrival rate is measured over windows of this length.
#define RATE_WINDOW_NS 10000000ULL
// Kernel memory a queued datagram costs beyond its payload (skb overhead).
#define SKB_OVERHEAD 1024
// Below this receive buffer (the kernel's stock net.core.rmem_max grants
// about 416 KiB) a flood that starts during a hold-off could overflow it
// before the rate is measured: no hold-off then.
#define MIN_HOLDOFF_RCVBUF (1024 * 1024)

typedef struct {
  napi_env env;
  int fd;
  int started;
  int closing;
  int poll_closed;
  int finalized;
  int open_handles;
  uv_poll_t poll;
  uv_timer_t timer;
  uint64_t holdoff_ms;
  int rcvbuf;
  uint64_t window_start;
  double window_count;
  double window_bytes;
  double rate;
  double mean_size;
  napi_ref out_ref;
  uint8_t *out;
  size_t out_cap;
  size_t out_len;
  uint32_t out_count;
  napi_ref on_batch;
  napi_ref on_error;
  napi_async_context async;
  uint8_t *slots;
  struct mmsghdr msgs[VLEN];
  struct iovec iov[VLEN];
  struct sockaddr_storage from[VLEN];
  union { struct cmsghdr align; uint8_t bytes[CONTROL_BYTES]; } control[VLEN];
  // The last sender's address, formatted once for a run of its datagrams.
  struct sockaddr_storage last_from;
  socklen_t last_from_len;
  char last_text[ADDRESS_MAX];
  uint8_t last_text_len;
  double truncated;
  double wakeups;
  double syscalls;
  double holdoffs;
  double kernel_drops;
} receiver_t;

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, #call " failed"); return NULL; } } while (0)

static napi_value make_errno_error (napi_env env, int err, const char *syscall) {
  napi_value code, message, error, value;
  const char *name = uv_err_name(-err);
  char text[160];
  snprintf(text, sizeof text, "%s %s: %s", syscall, name, strerror(err));
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message);
  napi_create_error(env, code, message, &error);
  napi_create_int32(env, -err, &value);
  napi_set_named_property(env, error, "errno", value);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &value);
  napi_set_named_property(env, error, "syscall", value);
  return error;
}

static receiver_t *unwrap (napi_env env, napi_value value) {
  receiver_t *r = NULL;
  if (napi_get_value_external(env, value, (void **)&r) != napi_ok || r == NULL) {
    napi_throw_type_error(env, NULL, "not a UDP receiver handle");
    return NULL;
  }
  return r;
}

// The receiver's memory lives until both libuv has closed the poll handle
// and the JavaScript handle is garbage: whichever comes last frees it.
// The arguments of a call whose first argument is a receiver handle: fills
// `argv` (missing ones are undefined) and returns the receiver, or NULL with
// a JavaScript exception pending.
static receiver_t *receiver_args (napi_env env, napi_callback_info info, size_t count, napi_value *argv) {
  size_t argc = count;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    napi_throw_error(env, NULL, "napi_get_cb_info failed");
    return NULL;
  }
  return unwrap(env, argv[0]);
}

static napi_status set_number (napi_env env, napi_value object, const char *name, double number) {
  napi_value value;
  napi_status status = napi_create_double(env, number, &value);
  return status == napi_ok ? napi_set_named_property(env, object, name, value) : status;
}

static void on_closed (uv_handle_t *handle) {
  receiver_t *r = (receiver_t *)handle->data;
  if (--r->open_handles > 0) return;
  free(r->slots);
  r->slots = NULL;
  r->poll_closed = 1;
  if (r->finalized) free(r);
}

static void on_finalize (napi_env env, void *data, void *hint) {
  receiver_t *r = (receiver_t *)data;
  (void)env; (void)hint;
  r->finalized = 1;
  if (!r->closing) {
    // Never closed (the process is ending): release the socket only.
    r->closing = 1;
    if (r->started) {
      uv_poll_stop(&r->poll);
      uv_timer_stop(&r->timer);
    }
    close(r->fd);
    if (r->started) return;
    r->poll_closed = 1;
  }
  if (r->poll_closed) {
    free(r->slots);
    free(r);
  }
}

#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif

// Refreshes kernel_drops from the socket while it is open.
static void read_kernel_drops (receiver_t *r) {
  uint32_t meminfo[SK_MEMINFO_VARS];
  socklen_t len = sizeof meminfo;
  if (r->fd < 0) return;
  if (getsockopt(r->fd, SOL_SOCKET, SO_MEMINFO, meminfo, &len) == 0 && len > SK_MEMINFO_DROPS * sizeof(uint32_t)) {
    r->kernel_drops = meminfo[SK_MEMINFO_DROPS];
  }
}

// Releases the socket and JavaScript references; the memory goes when libuv
// has closed the poll handle.
static void close_receiver (receiver_t *r) {
  if (r->closing) return;
  r->closing = 1;
  read_kernel_drops(r);
  napi_env env = r->env;
  if (r->out_ref) napi_delete_reference(env, r->out_ref);
  if (r->on_batch) napi_delete_reference(env, r->on_batch);
  if (r->on_error) napi_delete_reference(env, r->on_error);
  if (r->async) napi_async_destroy(env, r->async);
  r->out_ref = r->on_batch = r->on_error = NULL;
  r->async = NULL;
  if (r->started) {
    uv_poll_stop(&r->poll);
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->poll, on_closed);
    uv_close((uv_handle_t *)&r->timer, on_closed);
  }
  close(r->fd);
  r->fd = -1;
  if (!r->started) {
    free(r->slots);
    r->slots = NULL;
    r->poll_closed = 1;
  }
}

static void call_js (receiver_t *r, napi_ref ref, size_t argc, napi_value *argv) {
  napi_env env = r->env;
  napi_handle_scope scope;
  napi_value fn, global, result;
  napi_open_handle_scope(env, &scope);
  napi_get_reference_value(env, ref, &fn);
  napi_get_global(env, &global);
  if (napi_make_callback(env, r->async, global, fn, argc, argv, &result) == napi_pending_exception) {
    napi_value exception;
    napi_get_and_clear_last_exception(env, &exception);
    napi_fatal_exception(env, exception);
  }
  napi_close_handle_scope(env, scope);
}

static void hand_over (receiver_t *r) {
  if (r->out_count == 0) return;
  napi_env env = r->env;
  napi_handle_scope scope;
  napi_value argv[2];
  napi_open_handle_scope(env, &scope);
  napi_create_uint32(env, r->out_count, &argv[0]);
  napi_create_uint32(env, (uint32_t)r->out_len, &argv[1]);
  r->out_len = 0;
  r->out_count = 0;
  call_js(r, r->on_batch, 2, argv);
  napi_close_handle_scope(env, scope);
}

static void report_error (receiver_t *r, int err, const char *syscall) {
  napi_env env = r->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value error = make_errno_error(env, err, syscall);
  uv_poll_stop(&r->poll);
  uv_timer_stop(&r->timer);
  call_js(r, r->on_error, 1, &error);
  napi_close_handle_scope(env, scope);
}

static int same_sender (receiver_t *r, const struct sockaddr_storage *from, socklen_t len) {
  return len == r->last_from_len && memcmp(from, &r->last_from, len) == 0;
}

// Formats the sender's address (cached across a run from one sender).
static void remember_sender (receiver_t *r, const struct sockaddr_storage *from, socklen_t len) {
  const void *addr = from->ss_family == AF_INET6
    ? (const void *)&((const struct sockaddr_in6 *)from)->sin6_addr
    : (const void *)&((const struct sockaddr_in *)from)->sin_addr;
  if (inet_ntop(from->ss_family, addr, r->last_text, sizeof r->last_text) == NULL) r->last_text[0] = 0;
  r->last_text_len = (uint8_t)strlen(r->last_text);
  memcpy(&r->last_from, from, len);
  r->last_from_len = len;
}

static uint16_t port_of (const struct sockaddr_storage *from) {
  return ntohs(from->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)from)->sin6_port : ((const struct sockaddr_in *)from)->sin_port);
}

// When the kernel received the datagram of `msg` (SCM_TIMESTAMPNS), epoch
// ms; the time now when it did not say (SO_TIMESTAMPNS refused at bind).
static double received_at (struct msghdr *msg) {
  struct timespec ts;
  int found = 0;
  if (!(msg->msg_flags & MSG_CTRUNC)) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        memcpy(&ts, CMSG_DATA(c), sizeof ts);
        found = 1;
        break;
      }
    }
  }
  if (!found) clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void put_f64_be (uint8_t *p, double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof bits);
  for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)bits; bits >>= 8; }
}

static void pack (receiver_t *r, const struct sockaddr_storage *from, socklen_t from_len, const uint8_t *data, uint32_t length, double at) {
  if (!same_sender(r, from, from_len)) remember_sender(r, from, from_len);
  size_t size = HEADER + r->last_text_len + length;
  if (r->out_len + size > r->out_cap) {
    hand_over(r);
    if (r->closing) return;
  }
  uint8_t *p = r->out + r->out_len;
  uint16_t port = port_of(from);
  p[0] = length >> 24; p[1] = length >> 16; p[2] = length >> 8; p[3] = length;
  p[4] = port >> 8; p[5] = port;
  p[6] = r->last_text_len;
  put_f64_be(p + TIME_AT, at);
  memcpy(p + HEADER, r->last_text, r->last_text_len);
  memcpy(p + HEADER + r->last_text_len, data, length);
  r->out_len += size;
  r->out_count++;
}

static void on_readable (uv_poll_t *handle, int status, int events);

static void on_holdoff_end (uv_timer_t *timer) {
  receiver_t *r = (receiver_t *)timer->data;
  if (r->closing) return;
  int err = uv_poll_start(&r->poll, UV_READABLE, on_readable);
  if (err != 0) report_error(r, -err, "uv_poll_start");
}

// Counts a wake-up's datagrams into the rate window; the rate (datagrams
// per ns) is the last full window's, or the current one's once it is higher.
static void measure (receiver_t *r, int taken, double bytes) {
  uint64_t now = uv_hrtime();
  r->window_count += taken;
  r->window_bytes += bytes;
  uint64_t elapsed = now - r->window_start;
  double current = elapsed > 0 ? r->window_count / (double)elapsed : 0;
  if (elapsed >= RATE_WINDOW_NS) {
    r->rate = current;
    if (r->window_count > 0) r->mean_size = r->window_bytes / r->window_count;
    r->window_start = now;
    r->window_count = 0;
    r->window_bytes = 0;
  } else if (current > r->rate) {
    r->rate = current;
  }
}

static void maybe_hold_off (receiver_t *r, int taken) {
  if (r->holdoff_ms == 0 || taken >= VLEN || r->closing) return;
  // A libuv timer of n ms can take up to n + 1 ms.
  double expected = r->rate * (double)(r->holdoff_ms + 1) * 1e6 * (r->mean_size + SKB_OVERHEAD);
  if (r->rcvbuf < MIN_HOLDOFF_RCVBUF || expected * 4 > r->rcvbuf) return;
  uv_poll_stop(&r->poll);
  uv_timer_start(&r->timer, on_holdoff_end, r->holdoff_ms, 0);
  r->holdoffs++;
}

// Reads until the queue is empty or about `budget` datagrams are taken,
// handing them to JavaScript. Returns how many, or -1 when the receiver
// closed meanwhile or failed (the error is reported).
static int receive (receiver_t *r, int budget, double *bytes) {
  int taken = 0;
  while (taken < budget && !r->closing) {
    for (int i = 0; i < VLEN; i++) {
      r->iov[i].iov_base = r->slots + (size_t)i * SLOT_BYTES;
      r->iov[i].iov_len = SLOT_BYTES;
      memset(&r->msgs[i].msg_hdr, 0, sizeof r->msgs[i].msg_hdr);
      r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
      r->msgs[i].msg_hdr.msg_iovlen = 1;
      r->msgs[i].msg_hdr.msg_name = &r->from[i];
      r->msgs[i].msg_hdr.msg_namelen = sizeof r->from[i];
      r->msgs[i].msg_hdr.msg_control = r->control[i].bytes;
      r->msgs[i].msg_hdr.msg_controllen = CONTROL_BYTES;
    }
    int n = recvmmsg(r->fd, r->msgs, VLEN, MSG_DONTWAIT, NULL);
    r->syscalls++;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      // ICMP errors of earlier sends surface on a UDP socket; they do not
      // stop it receiving.
      if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) continue;
      int err = errno;
      hand_over(r);
      if (!r->closing) report_error(r, err, "recvmmsg");
      return -1;
    }
    for (int i = 0; i < n; i++) {
      if (r->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) { r->truncated++; continue; }
      pack(r, &r->from[i], r->msgs[i].msg_hdr.msg_namelen, r->iov[i].iov_base, r->msgs[i].msg_len, received_at(&r->msgs[i].msg_hdr));
      *bytes += r->msgs[i].msg_len;
      if (r->closing) return -1;
    }
    taken += n;
    if (n < VLEN) break;
  }
  if (r->closing) return -1;
  hand_over(r);
  return r->closing ? -1 : taken;
}

static void on_readable (uv_poll_t *handle, int status, int events) {
  receiver_t *r = (receiver_t *)handle->data;
  (void)events;
  if (r->closing) return;
  if (status < 0) return report_error(r, -status, "poll");
  r->wakeups++;
  double bytes = 0;
  int taken = receive(r, BUDGET, &bytes);
  if (taken < 0) return;
  measure(r, taken, bytes);
  maybe_hold_off(r, taken);
}

static napi_value js_bind (napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char host[256];
  size_t host_len;
  uint32_t port;
  bool ipv6;
  int32_t rcvbuf;
  bool reuse_port = false;
  CHECK(napi_get_value_string_utf8(env, argv[0], host, sizeof host, &host_len));
  CHECK(napi_get_value_uint32(env, argv[1], &port));
  CHECK(napi_get_value_bool(env, argv[2], &ipv6));
  CHECK(napi_get_value_int32(env, argv[3], &rcvbuf));
  if (argc > 4) CHECK(napi_get_value_bool(env, argv[4], &reuse_port));

  struct sockaddr_storage addr;
  socklen_t addr_len;
  memset(&addr, 0, sizeof addr);
  if (ipv6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&addr;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) { napi_throw(env, make_errno_error(env, EINVAL, "inet_pton")); return NULL; }
    addr_len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&addr;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) { napi_throw(env, make_errno_error(env, EINVAL, "inet_pton")); return NULL; }
    addr_len = sizeof *a;
  }

  int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) { napi_throw(env, make_errno_error(env, errno, "socket")); return NULL; }
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  int one = 1;
  // Each datagram's receive time, from the kernel (received_at; without it
  // the time it is read).
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  if (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    int err = errno;
    close(fd);
    napi_throw(env, make_errno_error(env, err, "setsockopt"));
    return NULL;
  }
  if (bind(fd, (struct sockaddr *)&addr, addr_len) != 0) {
    int err = errno;
    close(fd);
    napi_throw(env, make_errno_error(env, err, "bind"));
    return NULL;
  }

  receiver_t *r = calloc(1, sizeof *r);
  uint8_t *slots = malloc((size_t)VLEN * SLOT_BYTES);
  if (r == NULL || slots == NULL) {
    free(r);
    free(slots);
    close(fd);
    napi_throw(env, make_errno_error(env, ENOMEM, "malloc"));
    return NULL;
  }
  r->env = env;
  r->fd = fd;
  r->slots = slots;
  r->poll.data = r;
  napi_value handle;
  CHECK(napi_create_external(env, r, on_finalize, NULL, &handle));
  return handle;
}

static napi_value js_start (napi_env env, napi_callback_info info) {
  napi_value argv[5];
  receiver_t *r = receiver_args(env, info, 5, argv);
  if (r == NULL) return NULL;
  if (r->started || r->closing) { napi_throw_error(env, "ERR_RECEIVER_STATE", "the receiver is already started or closed"); return NULL; }
  void *data;
  size_t length;
  CHECK(napi_get_buffer_info(env, argv[1], &data, &length));
  if (length < HEADER + ADDRESS_MAX + SLOT_BYTES) { napi_throw_range_error(env, NULL, "the output buffer must hold at least one largest datagram"); return NULL; }
  CHECK(napi_create_reference(env, argv[1], 1, &r->out_ref));
  CHECK(napi_create_reference(env, argv[2], 1, &r->on_batch));
  CHECK(napi_create_reference(env, argv[3], 1, &r->on_error));
  napi_value name;
  CHECK(napi_create_string_utf8(env, "collector-cluster:udp", NAPI_AUTO_LENGTH, &name));
  CHECK(napi_async_init(env, NULL, name, &r->async));
  uint32_t holdoff_ms;
  CHECK(napi_get_value_uint32(env, argv[4], &holdoff_ms));
  r->holdoff_ms = holdoff_ms;
  socklen_t size_len = sizeof r->rcvbuf;
  if (getsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &r->rcvbuf, &size_len) != 0) r->rcvbuf = 0;
  r->window_start = uv_hrtime();
  r->mean_size = 200;
  r->out = data;
  r->out_cap = length;
  uv_loop_t *loop;
  CHECK(napi_get_uv_event_loop(env, (struct uv_loop_s **)&loop));
  int err = uv_poll_init(loop, &r->poll, r->fd);
  if (err == 0) {
    uv_timer_init(loop, &r->timer);
    r->timer.data = r;
    r->open_handles = 2;
    r->started = 1;
    err = uv_poll_start(&r->poll, UV_READABLE, on_readable);
  }
  if (err != 0) { napi_throw(env, make_errno_error(env, -err, "uv_poll_start")); return NULL; }
  return NULL;
}

static napi_value js_address (napi_env env, napi_callback_info info) {
  napi_value argv[1], result, value;
  receiver_t *r = receiver_args(env, info, 1, argv);
  if (r == NULL) return NULL;
  if (r->fd < 0) { napi_throw_error(env, "ERR_SOCKET_DGRAM_NOT_RUNNING", "the receiver is closed"); return NULL; }
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  if (getsockname(r->fd, (struct sockaddr *)&addr, &len) != 0) { napi_throw(env, make_errno_error(env, errno, "getsockname")); return NULL; }
  char text[ADDRESS_MAX];
  const void *a = addr.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&addr)->sin6_addr : (const void *)&((struct sockaddr_in *)&addr)->sin_addr;
  inet_ntop(addr.ss_family, a, text, sizeof text);
  CHECK(napi_create_object(env, &result));
  CHECK(napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &value));
  CHECK(napi_set_named_property(env, result, "address", value));
  CHECK(napi_create_string_utf8(env, addr.ss_family == AF_INET6 ? "IPv6" : "IPv4", NAPI_AUTO_LENGTH, &value));
  CHECK(napi_set_named_property(env, result, "family", value));
  CHECK(set_number(env, result, "port", port_of(&addr)));
  return result;
}

static napi_value js_stats (napi_env env, napi_callback_info info) {
  napi_value argv[1], result;
  receiver_t *r = receiver_args(env, info, 1, argv);
  if (r == NULL) return NULL;
  CHECK(napi_create_object(env, &result));
  CHECK(set_number(env, result, "truncated", r->truncated));
  CHECK(set_number(env, result, "wakeups", r->wakeups));
  CHECK(set_number(env, result, "syscalls", r->syscalls));
  CHECK(set_number(env, result, "holdoffs", r->holdoffs));
  read_kernel_drops(r);
  CHECK(set_number(env, result, "kernelDrops", r->kernel_drops));
  return result;
}

// Reads what the kernel holds for the socket now, up to `limit` datagrams,
// handing it over before returning: a stop must not close a socket with
// received datagrams still queued in it.
static napi_value js_drain (napi_env env, napi_callback_info info) {
  napi_value argv[2], result;
  receiver_t *r = receiver_args(env, info, 2, argv);
  if (r == NULL) return NULL;
  uint32_t limit;
  CHECK(napi_get_value_uint32(env, argv[1], &limit));
  double bytes = 0;
  int taken = r->started && !r->closing ? receive(r, (int)(limit > 0x7fffffff ? 0x7fffffff : limit), &bytes) : 0;
  CHECK(napi_create_int32(env, taken < 0 ? 0 : taken, &result));
  return result;
}

static napi_value js_close (napi_env env, napi_callback_info info) {
  napi_value argv[1];
  receiver_t *r = receiver_args(env, info, 1, argv);
  if (r == NULL) return NULL;
  close_receiver(r);
  return NULL;
}

static napi_value init (napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "bind", NULL, js_bind, NULL, NULL, NULL, napi_enumerable, NULL },
    { "start", NULL, js_start, NULL, NULL, NULL, napi_enumerable, NULL },
    { "address", NULL, js_address, NULL, NULL, NULL, napi_enumerable, NULL },
    { "stats", NULL, js_stats, NULL, NULL, NULL, napi_enumerable, NULL },
    { "drain", NULL, js_drain, NULL, NULL, NULL, napi_enumerable, NULL },
    { "close", NULL, js_close, NULL, NULL, NULL, napi_enumerable, NULL },
    { "layout", NULL, NULL, NULL, NULL, NULL, napi_enumerable, NULL }
  };
  if (napi_create_uint32(env, ENTRY_LAYOUT, &props[6].value) != napi_ok) return NULL;
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
