'use strict'

const net = require('node:net')
const TcpConnection = require('./tcp-connection')
const { createTlsAcceptor } = require('./tls')
const { connectionBudget, RESERVE } = require('./open-files')

/**
 * Accepts TCP connections and frames each byte stream into messages.
 *
 * Every accepted socket holds a slot from accept to close, through its TLS
 * handshake if any: at most `maxConnections` in all (fewer when the
 * open-file limit holds less: open-files.js) and
 * `maxConnectionsPerSource` per remote address. A connection that would pass
 * a limit first reclaims the slot of the connection (of that address; for
 * the global limit, of any) that has gone longest without completing a
 * frame, if that is at least `reclaimIdleAfter`: idle syslog senders keep
 * their connections for hours while nobody needs the room, and no number
 * of silent sockets locks a sender out. Otherwise the new one is refused
 * with a reset (`events.connectionsRejected` by limit). Reclaimed slots are
 * `events.connectionsEvicted` by limit; a connection holding an unfinished
 * frame for `frameTimeout` is closed (`events.frameTimeouts`, its bytes
 * `dropped.partial`), so one byte every few minutes keeps nothing;
 * connections idle for `idleTimeout` are closed (`events.idleTimeouts`).
 *
 * With `tlsCert` (lib/protocols/tls.js) each accepted socket goes through a
 * TLS handshake first; a refused or timed-out handshake closes the socket
 * and frees its slot at once. `events.connections` counts only connections
 * whose handshake succeeded (refusals are `events.tlsRejected`). `reload()`
 * re-reads the TLS files for new connections; open ones keep theirs.
 */
async function start (ctx) {
  const state = {
    slots: new Set(), // every accepted socket until it closes
    perSource: new Map(), // remote address → Set of its slots
    acceptor: null,
    noVictimUntil: 0, // no slot can be reclaimed for the global limit before then
    maxConnections: maxConnectionsOf(ctx)
  }
  if (ctx.options.tlsCert) {
    state.acceptor = createTlsAcceptor(ctx, (tlsSocket, rawSocket) => {
      const slot = rawSocket.slot
      if (slot && !slot.closed) openConnection(tlsSocket, ctx, slot, state)
      else tlsSocket.destroy()
    })
  }
  const server = net.createServer((socket) => accept(socket, ctx, state))
  await listen(server, ctx)
  server.on('error', (err) => ctx.fail(err))
  const sweeper = setInterval(() => sweep(ctx, state), sweepInterval(ctx.options))
  sweeper.unref()
  return {
    address: () => server.address(),
    ...(state.acceptor ? { reload: () => state.acceptor.reload() } : {}),
    close: () => close(server, state, sweeper)
  }
}

function accept (socket, ctx, state) {
  const source = socket.remoteAddress || ''
  if (ctx.allowList && !ctx.allowList.allows(source)) { // `allow`: before any byte is read
    ctx.count('connectionsRejected', 'notAllowed')
    ctx.logNotAllowed('connection', source)
    return socket.destroy()
  }
  const own = state.perSource.get(source)
  if (own && own.size >= ctx.options.maxConnectionsPerSource && !reclaim(own, 'perSourceLimit', ctx, state)) return refuse(socket, 'perSourceLimit', ctx)
  if (state.slots.size >= state.maxConnections && !reclaim(state.slots, 'maxConnections', ctx, state)) return refuse(socket, 'maxConnections', ctx)
  const slot = { socket, source, connection: null, lastFrameAt: Date.now(), frames: 0, holdingSince: 0, closed: false }
  take(slot, state)
  socket.once('close', () => release(slot, state))
  if (!state.acceptor) return openConnection(socket, ctx, slot, state)
  // Errors of the TCP socket under TLS surface on the TLS socket (a refused
  // handshake, or TcpConnection's error handler), not here.
  socket.on('error', () => {})
  socket.slot = slot
  state.acceptor.handshake(socket)
}

// maxConnections within the open-file limit, said at start when it is lowered.
function maxConnectionsOf (ctx) {
  const asked = ctx.options.maxConnections
  const { connections, limit, open } = connectionBudget(asked)
  if (connections < asked) {
    ctx.log('warn', { maxConnections: asked, openFileLimit: limit, open, reserve: RESERVE, accepting: connections },
      `--max-connections ${asked} does not fit the open-file limit (${limit}, ${open} open): at most ${connections} connections are accepted, the limits and evictions acting there; raise the limit (ulimit -n, systemd LimitNOFILE=) for more`)
  }
  return connections
}

// A reset the sender sees at once (ECONNRESET), not a connection that
// seems open and swallows what it writes.
function refuse (socket, limit, ctx) {
  ctx.count('connectionsRejected', limit)
  socket.on('error', () => {})
  socket.resetAndDestroy()
}

/**
 * Frees a slot among `slots` for a new connection: closes the one longest
 * without a complete frame (a handshake counts from its accept), when that
 * is at least reclaimIdleAfter. Returns whether it did. A scan that finds
 * none notes when the oldest will be old enough (slots only get younger or
 * go), so a flood of connections at the global limit costs one scan of
 * the 1,024 slots per grace, not one per connection.
 */
function reclaim (slots, limit, ctx, state) {
  const grace = ctx.options.reclaimIdleAfter
  const now = Date.now()
  if (!(grace > 0) || (slots === state.slots && now < state.noVictimUntil)) return false
  let victim = null
  for (const slot of slots) {
    if (!victim || slot.lastFrameAt < victim.lastFrameAt) victim = slot
  }
  if (!victim) return false
  if (now - victim.lastFrameAt < grace) {
    if (slots === state.slots) state.noVictimUntil = victim.lastFrameAt + grace
    return false
  }
  ctx.count('connectionsEvicted', limit)
  closeSlot(victim, state)
  return true
}

function take (slot, { slots, perSource }) {
  slots.add(slot)
  const own = perSource.get(slot.source)
  if (own) own.add(slot)
  else perSource.set(slot.source, new Set([slot]))
}

function release (slot, { slots, perSource }) {
  if (slot.closed) return
  slot.closed = true
  slots.delete(slot)
  const own = perSource.get(slot.source)
  own.delete(slot)
  if (own.size === 0) perSource.delete(slot.source)
}

/**
 * Ends a connection now and frees its slot at once: frames it delivered
 * stay delivered, frames waiting for capacity are handed over, an
 * unfinished frame is counted as partial (`cut`, at stop too: the sender
 * did not end it, as a FIN would have); a handshake is cut.
 */
function closeSlot (slot, state, cut = true) {
  const { connection } = slot
  if (connection) {
    connection.end(cut)
    connection.abandon()
    connection.socket.destroy()
  }
  slot.socket.destroy()
  release(slot, state)
}

function openConnection (socket, ctx, slot, state) {
  const connection = new TcpConnection(socket, ctx)
  slot.connection = connection
  slot.lastFrameAt = Date.now()
  ctx.count('connections')
  if (ctx.options.idleTimeout > 0) {
    // Closed whole, not half (a FIN alone): a peer ignoring it would keep its slot, and could send on.
    socket.setTimeout(ctx.options.idleTimeout, () => {
      ctx.count('idleTimeouts')
      closeSlot(slot, state)
    })
  }
  socket.on('close', () => {
    connection.abandon()
    release(slot, state)
  })
}

// How often connections are looked at: often enough to honour the shorter
// of the two deadlines within a quarter of it, at most once a second.
function sweepInterval ({ frameTimeout, reclaimIdleAfter }) {
  const shortest = Math.min(...[frameTimeout, reclaimIdleAfter].filter((ms) => ms > 0), 4000)
  return Math.max(25, Math.min(1000, Math.floor(shortest / 4)))
}

/**
 * Once per interval, not per frame: notes which connections completed a
 * frame since the last sweep (their `lastFrameAt`, what reclaiming ranks
 * by), and closes those holding an unfinished frame past frameTimeout.
 */
function sweep (ctx, state) {
  const now = Date.now()
  const limit = ctx.options.frameTimeout
  for (const slot of state.slots) {
    const connection = slot.connection
    if (!connection) continue
    if (connection.frames !== slot.frames) {
      slot.frames = connection.frames
      slot.lastFrameAt = now
      slot.holdingSince = connection.framer.holding() ? now : 0
      continue
    }
    if (!connection.framer.holding()) slot.holdingSince = 0
    else if (!slot.holdingSince) slot.holdingSince = now
    else if (limit > 0 && now - slot.holdingSince >= limit) {
      ctx.count('frameTimeouts')
      closeSlot(slot, state)
    }
  }
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
function close (server, state, sweeper) {
  clearInterval(sweeper)
  const closed = new Promise((resolve) => server.close(resolve))
  for (const slot of [...state.slots]) {
    if (slot.connection) slot.connection.socket.pause()
    closeSlot(slot, state)
  }
  return closed
}

module.exports = { start }
