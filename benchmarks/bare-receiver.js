'use strict'
// The baseline: one bare Node process counting datagrams. Reports its port,
// then its count on request, over IPC.
const dgram = require('node:dgram')

const socket = dgram.createSocket('udp4')
let received = 0
socket.on('message', () => { received++ })
try {
  socket.bind(0, '127.0.0.1', () => {
    try { socket.setRecvBufferSize(8 * 1024 * 1024) } catch {}
    process.send({ port: socket.address().port })
  })
} catch (err) { process.send({ error: err.message }) }
process.on('message', (m) => {
  if (m === 'count') {
    const { user, system } = process.cpuUsage()
    process.send({ received, rss: process.memoryUsage().rss, cpuMs: (user + system) / 1000 })
  }
  if (m === 'reset') received = 0
  if (m === 'exit') socket.close(() => process.exit(0))
})
