'use strict'
// Sends 200-byte datagrams to 127.0.0.1:<port> at <rate>/s for <ms>, paced
// per millisecond, then prints {"sent":N,"ms":M,"cpuMs":C}. Bounded in count and time.
// A 5th argument sends from that many sockets in turn (several source ports).
// Between bursts it sleeps (a 1 ms timer) rather than spin on setImmediate:
// a spinning sender holds one of the two cores whole, and that starves a
// receiver made of several processes far more than a single bare one.
const dgram = require('node:dgram')

const [port, rate, durationMs, size = 200, senders = 1] = process.argv.slice(2).map(Number)
const sockets = Array.from({ length: Math.max(1, senders) }, () => dgram.createSocket('udp4'))
const payload = Buffer.alloc(size, 0x61)
const total = Math.round(rate * durationMs / 1000)
let sent = 0
const t0 = process.hrtime.bigint()

function cpuMs () {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

function elapsedMs () {
  return Number(process.hrtime.bigint() - t0) / 1e6
}

function tick () {
  const due = Math.min(total, Math.floor(elapsedMs() * rate / 1000))
  while (sent < due) {
    payload.writeUInt32BE(sent, 0)
    sockets[sent % sockets.length].send(payload)
    sent++
  }
  if (sent < total && elapsedMs() < durationMs * 3) setTimeout(tick, 1)
  else Promise.all(sockets.map((s) => new Promise((resolve) => s.close(resolve)))).then(() => process.stdout.write(JSON.stringify({ sent, ms: Math.round(elapsedMs()), cpuMs: cpuMs() }) + '\n'))
}

// connected sockets skip the per-send address lookup
Promise.all(sockets.map((s) => new Promise((resolve) => s.connect(port, '127.0.0.1', resolve)))).then(() => {
  port && setImmediate(() => tick())
})
