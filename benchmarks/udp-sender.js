'use strict'
// Sends 200-byte datagrams to 127.0.0.1:<port> at <rate>/s for <ms>, paced
// per millisecond, then prints {"sent":N,"ms":M,"cpuMs":C}. Bounded in count and time.
// Between bursts it sleeps (a 1 ms timer) rather than spin on setImmediate:
// a spinning sender holds one of the two cores whole, and that starves a
// receiver made of several processes far more than a single bare one.
const dgram = require('node:dgram')

const [port, rate, durationMs, size = 200] = process.argv.slice(2).map(Number)
const socket = dgram.createSocket('udp4')
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
    socket.send(payload)
    sent++
  }
  if (sent < total && elapsedMs() < durationMs * 3) setTimeout(tick, 1)
  else socket.close(() => process.stdout.write(JSON.stringify({ sent, ms: Math.round(elapsedMs()), cpuMs: cpuMs() }) + '\n'))
}

socket.connect(port, '127.0.0.1', () => {
  // connected sockets skip the per-send address lookup
  port && setImmediate(() => tick())
})
