'use strict'

const net = require('node:net')
const TcpConnection = require('./tcp-connection')
const { createTlsAcceptor } = require('./tls')

/**
 * Accepts TCP connections and frames each byte stream into messages. At
 * most `maxConnections` in all and `maxConnectionsPerSource` per remote
 * address (more are refused and counted in `events.connectionsRejected`);
 * connections idle for `idleTimeout` are closed (`events.idleTimeouts`), so
 * a few idle or hostile peers cannot lock legitimate senders out.
 *
 * With `tlsCert` (lib/protocols/tls.js) each accepted socket goes through
 * a TLS handshake first; the limits above apply before it, and
 * `events.connections` counts only connections whose handshake succeeded
 * (refusals are `events.tlsRejected`). `reload()` re-reads the TLS files
 * for new connections; open ones keep theirs.
 */
async function start (ctx) {
  const state = {
    connections: new Set(),
    perSource: new Map(), // remote address → open connections
    underTls: new Set(), // TCP sockets handed to TLS (in a handshake or past it)
    acceptor: null
  }
  if (ctx.options.tlsCert) state.acceptor = createTlsAcceptor(ctx, (socket) => openConnection(socket, ctx, state.connections))
  const server = net.createServer((socket) => accept(socket, ctx, state))
  server.maxConnections = ctx.options.maxConnections
  server.on('drop', () => ctx.count('connectionsRejected', 'maxConnections'))
  await listen(server, ctx)
  server.on('error', (err) => ctx.fail(err))
  return {
    server,
    connections: state.connections,
    address: () => server.address(),
    ...(state.acceptor ? { reload: () => state.acceptor.reload() } : {}),
    close: () => close(server, state)
  }
}

function accept (socket, ctx, state) {
  const { perSource, acceptor } = state
  const source = socket.remoteAddress || ''
  if (ctx.allowList && !ctx.allowList.allows(source)) { // `allow`: before any byte is read
    ctx.count('connectionsRejected', 'notAllowed')
    ctx.logNotAllowed('connection', source)
    return socket.destroy()
  }
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
  if (!acceptor) return openConnection(socket, ctx, state.connections)
  // Errors of the TCP socket under TLS surface on the TLS socket (a refused
  // handshake, or TcpConnection's error handler), not here.
  socket.on('error', () => {})
  state.underTls.add(socket)
  socket.once('close', () => state.underTls.delete(socket))
  acceptor.handshake(socket)
}

function openConnection (socket, ctx, connections) {
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
// Handshakes not finished yet have delivered nothing: they are cut.
function close (server, { connections, underTls }) {
  const closed = new Promise((resolve) => server.close(resolve))
  for (const connection of connections) {
    connection.socket.pause()
    connection.end()
    connection.abandon()
    connection.socket.destroy()
  }
  for (const socket of underTls) socket.destroy()
  return closed
}

module.exports = { start }
