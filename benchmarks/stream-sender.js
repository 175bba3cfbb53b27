'use strict'
// Sends binary stream packets (see test/fixtures/binary-stream-worker.js) to
// 127.0.0.1:<port>: packet i belongs to stream i % streams and is that
// stream's round k = floor(i / streams). With --bidirectional, even rounds go
// a→b and odd rounds b→a; the packet number is the direction's own round + 1.
// Paced per millisecond at <rate>/s for <ms>, bounded in count and time;
// prints {"sent":N,"ms":M}.
// Usage: node stream-sender.js <port> <streams> <rate> <ms> [bidirectional 0|1]
const dgram = require('node:dgram')

const [port, streams, rate, durationMs, bidirectional = 0] = process.argv.slice(2).map(Number)
const total = Math.round(rate * durationMs / 1000)
let socket = null
const t0 = process.hrtime.bigint()
const wall0 = Date.now()
let sent = 0

/** What packet i carries; the benchmark recomputes it to check the database. */
function packetOf (i, streams, bidirectional) {
  const stream = i % streams
  const round = Math.floor(i / streams)
  const direction = bidirectional ? round % 2 : 0
  const number = (bidirectional ? Math.floor(round / 2) : round) + 1
  return { stream, direction, number }
}

function encode (i) {
  const { stream, direction, number } = packetOf(i, streams, bidirectional)
  const buf = Buffer.allocUnsafe(17)
  buf.writeUInt32BE(stream, 0)
  buf[4] = direction
  buf.writeUInt32BE(number, 5)
  buf.writeDoubleBE(wall0 + elapsedMs(), 9)
  return buf
}

function elapsedMs () {
  return Number(process.hrtime.bigint() - t0) / 1e6
}

function tick () {
  const due = Math.min(total, Math.floor(elapsedMs() * rate / 1000))
  while (sent < due) socket.send(encode(sent++))
  if (sent < total && elapsedMs() < durationMs * 3) setImmediate(tick)
  else socket.close(() => process.stdout.write(JSON.stringify({ sent, ms: Math.round(elapsedMs()) }) + '\n'))
}

if (require.main === module) {
  socket = dgram.createSocket('udp4')
  socket.connect(port, '127.0.0.1', () => setImmediate(tick))
}

module.exports = { packetOf }
