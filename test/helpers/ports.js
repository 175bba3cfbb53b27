'use strict'
// A TCP port nothing listens on right now (bound on port 0, then closed):
// for servers a test starts itself on a port it must name in advance.
const net = require('node:net')
const dgram = require('node:dgram')

/** @returns {Promise<number>} */
async function freePort (host = '127.0.0.1') {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, host, resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A free UDP port pair on loopback (even RTP port, RTCP = RTP + 1), probed by binding both. */
async function freePortPair (host = '127.0.0.1') {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20000 + 2 * Math.floor(Math.random() * 4000)
    const sockets = [dgram.createSocket('udp4'), dgram.createSocket('udp4')]
    try {
      await Promise.all(sockets.map((socket, i) => new Promise((resolve, reject) => {
        socket.once('error', reject)
        socket.bind(port + i, host, resolve)
      })))
      return port
    } catch {
      // taken: try another
    } finally {
      for (const socket of sockets) socket.close()
    }
  }
  throw new Error('no free UDP port pair')
}

module.exports = { freePort, freePortPair }
