'use strict'

const net = require('node:net')
const TcpConnection = require('./tcp-connection')

/** Accepts TCP connections and frames each byte stream into messages. */
async function start (ctx) {
  const connections = new Set()
  const server = net.createServer((socket) => accept(socket, ctx, connections))
  server.maxConnections = ctx.options.maxConnections
  server.on('drop', () => ctx.count('connectionsRejected'))
  await listen(server, ctx)
  server.on('error', (err) => ctx.fail(err))
  return {
    server,
    connections,
    address: () => server.address(),
    close: () => close(server, connections)
  }
}

function accept (socket, ctx, connections) {
  const connection = new TcpConnection(socket, ctx)
  connections.add(connection)
  ctx.count('connections')
  if (ctx.options.idleTimeout > 0) {
    socket.setTimeout(ctx.options.idleTimeout, () => {
      ctx.count('idleTimeouts')
      socket.end()
    })
  }
  socket.on('close', () => {
    connection.abandon()
    connections.delete(connection)
  })
}

function listen (server, ctx) {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(ctx.port, ctx.host, () => {
      server.removeListener('error', reject)
      resolve()
    })
  })
}

// Stop accepting, then end every connection after the frames it already
// delivered; bytes of an unfinished frame are counted as 'partial'. Frames
// waiting for capacity are handed over now: the server may report closed
// before the sockets' own 'close' events, when the workers are leaving.
function close (server, connections) {
  const closed = new Promise((resolve) => server.close(resolve))
  for (const connection of connections) {
    connection.socket.pause()
    connection.framer.end()
    connection.abandon()
    connection.socket.destroy()
  }
  return closed
}

module.exports = { start }
