'use strict'

// The sender child of the HEP benchmarks (hep-e2e.js, hep-sip.js): sends
// `datagrams` to 127.0.0.1:`port` at `rate` a second, in 10 ms ticks, and
// tells its parent when it is ready and when it is done (with when it
// started). Sending from a process of its own keeps the sender's CPU out
// of the collector's figures. `stamp(datagram, nowMs)`, when given, writes
// the time of sending into each datagram just before it goes (a capture
// agent's time of capture).
const dgram = require('node:dgram')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function sendPaced (datagrams, port, rate, stamp = null) {
  const socket = dgram.createSocket('udp4')
  socket.bind(0, '127.0.0.1', async () => {
    process.send({ ready: true })
    const perTick = Math.max(1, Math.round(rate / 100))
    const started = Date.now()
    for (let i = 0; i < datagrams.length;) {
      const tickEnd = started + (i / perTick + 1) * 10
      for (let k = 0; k < perTick && i < datagrams.length; k++, i++) {
        if (stamp) stamp(datagrams[i], Date.now())
        socket.send(datagrams[i], port, '127.0.0.1')
      }
      const wait = tickEnd - Date.now()
      if (wait > 0) await sleep(wait)
    }
    await sleep(100)
    process.send({ done: true, started })
    socket.close()
  })
}

module.exports = { sendPaced }
