'use strict'

const net = require('node:net')
const TcpConnection = require('./tcp-connection')

/**
 * Accepts TCP connections and frames each byte stream into messages. At
 * most `maxConnections` in all and `maxConnectionsPerSource` per remote
 * address (more are refused and counted in `events.connectionsRejected`);
 * connections idle for `idleTimeout` are closed (`events.idleTimeouts`), so
 * a few idle or hostile peers cannot lock legitimate senders out.
 */
async function start (ctx) {
  const connections = new Set()
  const perSource = new Map() // remote address → open connections
  const server = net.createServer((socket) => accept(socket, ctx, connections, perSource))
  server.maxConnections = ctx.options.maxConnections
  server.on('drop', () => ctx.count('connectionsRejected', 'maxConnections'))
  await listen(server, ctx)
  server.on('error', (err) => ctx.fail(err))
  return {
    server,
    connections,
    address: () => server.address(),
    close: () => close(server, connections)
  }
}

function accept (socket, ctx, connections, perSource) {
  const source = socket.remoteAddress || ''
  const open = perSource.get(source) || 0
  if (open >= ctx.options.maxConnectionsPerSource) {
    ctx.count('connectionsRejected', 'perSourceLimit')
    return socket.destroy()
  }
  perSource.set(source, open + 1)
  socket.once('close', () => {
    const left = perSource.get(source) - 1
    if (left > 0) perSource.set(source, left)
    else perSource.delete(source)
  })
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
    connection.end()
    connection.abandon()
    connection.socket.destroy()
  }
  return closed
}

module.exports = { start }
