'use strict'

const { createFramer } = require('./framing')

/**
 * Reads frames from one TCP socket and dispatches them as `{ data, remote }`.
 * When every worker is saturated the socket is paused and the frame waits,
 * so TCP backpressure reaches the sender instead of dropping data.
 */
class TcpConnection {
  constructor (socket, ctx) {
    this.socket = socket
    this.ctx = ctx
    // A peer that reset the connection before it was accepted has no
    // address any more; its frames were read all the same.
    this.remote = { address: socket.remoteAddress || '', port: socket.remotePort || 0 }
    this.waiting = []
    this.ended = false
    this.frames = 0 // completed frames: tcp-server.js notes when they last moved
    this.framer = createFramer(ctx.options.framing, ctx.options.maxFrameBytes, {
      frame: (data) => this.onFrame(data),
      drop: (reason) => ctx.drop(reason)
    })
    socket.on('data', (chunk) => this.framer.push(chunk))
    // FIN ('end') and reset ('close' with an error, without 'end') both end
    // the byte stream. After a FIN a newline-framed line without its LF is
    // the sender's last; after a reset it is cut off (the sender died or
    // gave up mid-write): partial, not stored as if whole.
    socket.on('end', () => this.end())
    socket.on('close', (hadError) => this.end(hadError))
    socket.on('error', (err) => ctx.logger.debug({ err, remote: this.remote }, 'tcp connection error'))
  }

  /**
   * The byte stream is over: what remains of an unfinished frame is settled
   * once. `cut`: the collector closes it (a reclaimed slot, frameTimeout),
   * so an unfinished frame is partial even where the sender's own close
   * would have ended it.
   */
  end (cut = false) {
    if (this.ended) return
    this.ended = true
    this.framer.end(cut)
  }

  onFrame (data) {
    this.frames++
    // Framed while the chunk holding its last bytes is read: its arrival.
    const message = { data, remote: this.remote, receivedAt: Date.now() }
    if (this.waiting.length === 0 && this.ctx.dispatch(message)) return
    this.waiting.push(message)
    if (this.waiting.length === 1) this.pause()
  }

  pause () {
    this.socket.pause()
    this.ctx.onCapacity(() => this.resume())
  }

  resume () {
    while (this.waiting.length > 0) {
      if (!this.ctx.dispatch(this.waiting[0])) return this.ctx.onCapacity(() => this.resume())
      this.waiting.shift()
    }
    if (!this.socket.destroyed) this.socket.resume()
  }

  /**
   * The connection is torn down (peer gone or stop()): frames still waiting
   * were already read, so TCP told the sender they arrived. Deliver them,
   * past maxInFlight if need be; only with no worker at all are they
   * dropped, and the master names the reason.
   */
  abandon () {
    for (const message of this.waiting) {
      if (!this.ctx.dispatch(message, true)) this.ctx.dropRefused()
    }
    this.waiting = []
  }
}

module.exports = TcpConnection
