'use strict'

const net = require('node:net')
const TcpConnection = require('./tcp-connection')
const { connectTls } = require('./tls')
const { tlsWanted } = require('./tls-options')

const KEEPALIVE_MS = 60000 // idle this long, the first probe (then the kernel's interval and count)

/**
 * Connects out to `host:port` and frames what the peer sends. When the
 * connection drops the balancer's retry logic reconnects with backoff.
 * With TLS (`tls`, `tlsCa`, `tlsCert`) the files are read at each connect,
 * so a reconnect uses renewed ones.
 */
async function start (ctx) {
  const socket = tlsWanted(ctx.options) ? await connectTls(ctx) : await connect(ctx)
  // A peer gone without a FIN or a reset (power lost, a NAT or firewall
  // forgetting the connection) would leave us connected to nothing: the
  // kernel's keepalive probes find it, the connection closes with an error,
  // and the reconnect with backoff takes over. A quiet peer still alive stays.
  socket.setKeepAlive(true, KEEPALIVE_MS)
  const connection = new TcpConnection(socket, ctx)
  let closing = false
  socket.on('close', () => {
    connection.abandon()
    if (!closing) ctx.fail(new Error(`connection to ${ctx.host}:${ctx.port} closed`))
  })
  return {
    socket,
    address: () => ({ address: socket.localAddress, port: socket.localPort, remoteAddress: ctx.host, remotePort: ctx.port }),
    close: () => {
      closing = true
      // The peer did not end what it was sending: an unfinished frame is partial, not a message.
      connection.framer.end(true)
      connection.abandon()
      return new Promise((resolve) => socket.end(resolve)).then(() => socket.destroy())
    }
  }
}

function connect (ctx) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: ctx.host, port: ctx.port })
    socket.once('error', reject)
    socket.once('connect', () => {
      socket.removeListener('error', reject)
      resolve(socket)
    })
  })
}

module.exports = { start }
