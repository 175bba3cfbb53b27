'use strict'

const dgram = require('node:dgram')
const net = require('node:net')

/** One UDP socket in the master; every datagram is dispatched as `{ data, rinfo }`. */
async function start (ctx) {
  const socket = dgram.createSocket({ type: net.isIPv6(ctx.host) ? 'udp6' : 'udp4' })
  socket.on('message', (data, rinfo) => {
    if (!ctx.dispatch({ data, rinfo })) ctx.drop('queueFull')
  })
  await bind(socket, ctx)
  socket.on('error', (err) => ctx.fail(err))
  setBufferSize(socket, ctx.options.recvBufferSize, ctx.logger)
  return {
    socket,
    address: () => socket.address(),
    close: () => new Promise((resolve) => socket.close(resolve))
  }
}

function bind (socket, ctx) {
  return new Promise((resolve, reject) => {
    const onError = (err) => {
      socket.close()
      reject(err)
    }
    socket.once('error', onError)
    socket.bind(ctx.port, ctx.host, () => {
      socket.removeListener('error', onError)
      resolve()
    })
  })
}

// A large kernel buffer absorbs bursts while the master is busy; the kernel
// caps it at net.core.rmem_max, which is fine.
function setBufferSize (socket, size, logger) {
  if (!size) return
  try {
    socket.setRecvBufferSize(size)
  } catch (err) {
    logger.warn({ err, size }, 'could not set the UDP receive buffer size')
  }
}

module.exports = { start }
