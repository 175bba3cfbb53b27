// The ingest benchmark's load generator: sends <size>-byte datagrams to
// 127.0.0.1:<port> at <rate>/s for <ms>, with sendmmsg() in bursts paced
// every 100 us, then prints {"sent":N,"ms":M,"cpuMs":C}. With <senders>
// (default 1, at most 64) it sends from that many sockets, each its own
// source port, a burst from each in turn: several 4-tuples, as many
// senders are (a reuseport group spreads by 4-tuple). A Node sender
// costs about as much CPU per datagram as the receivers it measures, so on
// two cores it runs out first; this one leaves the CPU to the receivers.
// Bounded: it stops at <rate>·<ms> datagrams or after 3·<ms>.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BURST 64
#define MAX_SENDERS 64

static double now_ms (void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms (void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int main (int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: udp-blast <port> <rate> <ms> [size] [senders]\n");
    return 2;
  }
  int port = atoi(argv[1]);
  double rate = atof(argv[2]);
  double duration = atof(argv[3]);
  size_t size = argc > 4 ? (size_t)atoi(argv[4]) : 200;
  if (size < 4 || size > 65507) size = 200;
  int senders = argc > 5 ? atoi(argv[5]) : 1;
  if (senders < 1 || senders > MAX_SENDERS) senders = 1;
  long total = (long)(rate * duration / 1000 + 0.5);

  int fds[MAX_SENDERS];
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  for (int i = 0; i < senders; i++) {
    fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
    if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&to, sizeof to) != 0) {
      perror("udp-blast");
      return 1;
    }
  }
  long bursts = 0;

  static uint8_t payloads[BURST][65536];
  struct iovec iov[BURST];
  struct mmsghdr msgs[BURST];
  for (int i = 0; i < BURST; i++) {
    memset(payloads[i], 0x61, size);
    iov[i].iov_base = payloads[i];
    iov[i].iov_len = size;
    memset(&msgs[i], 0, sizeof msgs[i]);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }

  long sent = 0;
  double t0 = now_ms();
  struct timespec pause = { 0, 100000 };
  while (sent < total && now_ms() - t0 < duration * 3) {
    long due = (long)((now_ms() - t0) * rate / 1000);
    if (due > total) due = total;
    while (sent < due) {
      int n = due - sent < BURST ? (int)(due - sent) : BURST;
      for (int i = 0; i < n; i++) {
        uint32_t seq = htonl((uint32_t)(sent + i));
        memcpy(payloads[i], &seq, 4);
      }
      int done = sendmmsg(fds[bursts++ % senders], msgs, n, 0);
      if (done < 0) {
        if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) continue;
        // The receiver is gone (ICMP port unreachable): stop, reporting what was sent.
        if (errno == ECONNREFUSED) break;
        perror("udp-blast: sendmmsg");
        return 1;
      }
      sent += done;
    }
    nanosleep(&pause, NULL);
  }
  printf("{\"sent\":%ld,\"ms\":%ld,\"cpuMs\":%.3f}\n", sent, (long)(now_ms() - t0 + 0.5), cpu_ms());
  for (int i = 0; i < senders; i++) close(fds[i]);
  return 0;
}
