'use strict'
// A TCP port nothing listens on right now (bound on port 0, then closed):
// for servers a test starts itself on a port it must name in advance.
const net = require('node:net')

/** @returns {Promise<number>} */
async function freePort (host = '127.0.0.1') {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, host, resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

module.exports = { freePort }
