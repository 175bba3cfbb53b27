'use strict'

const EventEmitter = require('node:events')
const { whenAny } = require('../shared/when-any')
const ipc = require('../shared/ipc')
const { minLevel } = require('../shared/logger')
const { forkWorker, waitReady } = require('./worker-start')
const WorkerHandle = require('./worker-handle')
const WorkerDownError = require('../../exceptions/worker-down-error')
const { BatchIds } = require('../shared/batch-ids')
const { ProgressFiles } = require('../shared/progress-file')
const { snapshotOf, collectCustom, heldSince } = require('./pool-counters')
const { POISON_STRIKES, judge, leave, giveUpPoison, crashHistory } = require('./batch-fate')
const { waitForPrevious } = require('./handover')

const STATS_TIMEOUT_MS = 1000
// A worker that ran this long before it died was not crash-looping (an operator's kill, the OOM
// killer): respawned at once, its slot's crash history starts over. Shorter lives count toward maxCrashes.
const STABLE_UPTIME_MS = 1000

/**
 * Forks and supervises the workers of one balancer. Each worker owns a slot (0..instances-1)
 * that its replacement inherits, so flow affinity survives respawns and rolling restarts.
 * `rotation` lists the ready workers by slot: the list handed to `distribute()`.
 *
 * A worker that dies leaves its unacknowledged batches behind; they go to its slot's replacement
 * first thing (so hash affinity holds), or, when the slot is given up, to one other worker, all
 * of them to the same one and in order (a storing worker's idempotence relies on that, see
 * docs/delivery.md "Delivery").
 *
 * With a disk buffer (`journal`), what the pool cannot deliver while it
 * stops stays in the buffer for the next run ('kept') instead of being
 * dropped, and while no worker is up, what arrives waits there for its
 * slot's next worker (holders()).
 *
 * A batch is given up only as poison (POISON_STRIKES workers in a row ended
 * by themselves while processing it: judge()) or when no worker is left to
 * take it; it is kept in the dead-letter directory (`deadLetters`, see
 * dead-letters.js) and released from the disk buffer, to be replayed by
 * hand once the worker is fixed.
 *
 * With receive 'reuseport' (`listen`: the socket each worker binds) the
 * workers receive themselves: a worker is ready once bound, and what it
 * received and had not finished when it died is lost with it
 * (dropped.workerLost; nobody else held it).
 *
 * Events: 'workerExit' (info), 'workerRespawned' (handle), 'capacity',
 * 'received' (messages, bytes, dropped: what a worker's own socket brought),
 * 'dropped' (reason, n: messages given up, already counted as received),
 * 'deadLettered' (n, entry: messages given up and kept), 'deadLetterFailed' (err),
 * 'kept' (n: messages left in the disk buffer), 'bufferWriteFailed' (err),
 * 'slotFailed' (slot), 'error' (WorkerDownError: no worker left).
 */
class WorkerPool extends EventEmitter {
  constructor (options, logger, journal = null, listen = null, deadLetters = null) {
    super()
    this.options = options
    this.logger = logger
    this.journal = journal
    this.deadLetters = deadLetters
    this.listen = listen
    this.progress = new ProgressFiles() // each worker's poison evidence
    this.state = 'idle' // → running → stopping → stopped
    this.starting = false
    this.current = new Array(options.instances).fill(null)
    this.rotation = []
    this.leader = null
    this.crashes = this.current.map(() => [])
    this.respawnTimers = new Set()
    this.spawning = this.current.map(() => 0) // forks not yet ready, per slot
    this.failedSlots = new Set()
    this.orphans = this.current.map(() => []) // batches waiting for the slot's next worker
    this.batchIds = new BatchIds()
    this.respawns = 0
    this.rollingRestarts = 0
    this.statsRequests = 0
    this.live = new Set() // every handle not yet gone, including ones draining
    this.retired = { processed: 0, failed: 0, dispatched: 0 }
    this.retiredKernelDrops = 0
  }

  /** Every counter of the pool in one synchronous pass (pool-counters.js). */
  snapshot (customs = null) {
    return snapshotOf(this, customs)
  }

  /** Each live worker's own stats, asked over IPC (pool-counters.js). */
  collectCustom () {
    return collectCustom(this, STATS_TIMEOUT_MS)
  }

  /** Forks every slot; resolves when all are ready, rejects if one fails to start. */
  async start () {
    this.state = 'running'
    this.starting = true // the leader is chosen once every slot is up (electLeader)
    const slots = this.current.map((_, slot) => slot)
    const results = await Promise.allSettled(slots.map((slot) => this.spawn(slot)))
    this.starting = false
    const failure = results.find((r) => r.status === 'rejected')
    if (failure) {
      await this.stop()
      throw failure.reason
    }
    this.electLeader()
  }

  /**
   * Forks a worker for `slot` and puts it in rotation once ready. A slot
   * has one worker: one still there when the new one is ready (a respawn
   * and a rolling restart crossed) is retired.
   */
  async spawn (slot) {
    const handle = this.fork(slot)
    this.spawning[slot]++
    try {
      await waitReady(handle)
    } finally {
      this.spawning[slot]--
    }
    if (this.state !== 'running') {
      await this.retire(handle)
      throw new WorkerDownError(`worker for slot ${slot} started while the pool was ${this.state}`)
    }
    const previous = this.current[slot]
    // What was formed for the slot while no worker was up joins its orphans
    // first: the new worker takes them all, oldest first.
    if (previous && previous.state === 'gone') previous.sendPending()
    this.current[slot] = handle
    handle.state = 'ready'
    handle.readyAt = Date.now()
    for (const batch of this.orphans[slot].splice(0)) handle.redeliver(batch)
    if (previous && previous.state === 'ready' && this.options.affinity === 'strict') waitForPrevious(handle, previous)
    this.putInRotation(handle, previous)
    if (previous && previous.state === 'ready') this.retire(previous)
    return handle
  }

  fork (slot) {
    const { options } = this
    const progressFile = this.progress.create()
    const clusterWorker = forkWorker(options, slot, { logLevel: minLevel(this.logger), listen: this.listen, progressFile })
    const handle = new WorkerHandle(clusterWorker, slot, options, this.batchIds, this.journal)
    handle.progressFile = progressFile
    this.live.add(handle)
    handle.on('bufferWriteFailed', (err) => this.emit('bufferWriteFailed', err))
    handle.on('bufferReadFailed', (err) => this.emit('bufferReadFailed', err))
    handle.on('log', (level, fields, msg) => this.logWorker(handle, level, fields, msg))
    handle.on('ack', () => this.emit('capacity'))
    handle.on('held', (batch) => this.hold(handle.slot, batch))
    handle.on('dropped', (reason, n) => this.emit('dropped', reason, n))
    handle.on('received', (n, bytes, dropped) => this.emit('received', n, bytes, dropped))
    handle.on('heldRequest', (id) => handle.send([ipc.HELD_RES, id, heldSince(this)]))
    clusterWorker.on('exit', (code, signal) => this.onExit(handle, code, signal))
    return handle
  }

  logWorker (handle, level, fields, msg) {
    const log = this.logger[level] ? level : 'info'
    this.logger[log]({ ...fields, worker: handle.id, slot: handle.slot, workerPid: handle.pid }, msg)
  }

  putInRotation (handle, previous) {
    const rotation = this.rotation.filter((h) => h !== previous && h !== handle)
    rotation.push(handle)
    rotation.sort((a, b) => a.slot - b.slot)
    this.rotation = rotation
    this.electLeader()
    this.emit('capacity')
  }

  takeOutOfRotation (handle) {
    if (!this.rotation.includes(handle)) return
    this.rotation = this.rotation.filter((h) => h !== handle)
    this.electLeader()
  }

  // Exactly one worker (the lowest slot in rotation) runs singleton jobs;
  // none while the pool starts (the first up would lead until a lower slot
  // came: its jobs set up twice) or once it stops (the next in rotation is
  // about to stop too: made leader, it would start them again for the time
  // it has left).
  electLeader () {
    const leader = this.state === 'stopping' || this.starting ? null : this.rotation[0] || null
    if (leader === this.leader) return
    if (this.leader) this.leader.send([ipc.ROLE, { leader: false }])
    this.leader = leader
    if (leader) leader.send([ipc.ROLE, { leader: true }])
  }

  onExit (handle, code, signal) {
    const expected = handle.state === 'closing'
    handle.state = 'gone'
    this.takeOutOfRotation(handle)
    const own = handle.ownInFlight
    const suspect = judge(handle, this.progress.take(handle.progressFile), expected, code, signal)
    const batches = handle.takeUndelivered()
    const held = batches.reduce((sum, batch) => sum + batch.count, 0)
    this.live.delete(handle)
    this.retired.processed += handle.processed
    this.retired.failed += handle.failed
    this.retired.dispatched += handle.dispatched
    this.retiredKernelDrops += handle.kernelDrops
    if (own > 0) this.emit('dropped', expected ? 'shutdown' : 'workerLost', own)
    handle.emit('gone')
    if (expected && held === 0) return
    this.emit('workerExit', { id: handle.id, slot: handle.slot, pid: handle.pid, code, signal, held, expected, started: handle.readyAt > 0 })
    // Not while a worker for the slot is starting (a rolling restart's): it takes the slot.
    const respawn = !expected && this.state === 'running' && this.current[handle.slot] === handle && this.spawning[handle.slot] === 0
    const poisoned = held > 0 ? this.rehome(handle.slot, batches, expected, suspect) : 0
    if (!respawn) return
    if (handle.readyAt && Date.now() - handle.readyAt >= STABLE_UPTIME_MS) this.crashes[handle.slot] = []
    this.scheduleRespawn(handle.slot, poisoned)
  }

  /**
   * Batches of a worker that is gone: to the slot's current worker if a
   * rolling restart already put one there, else to the slot's next worker;
   * the suspect (see judge) is given up as poison at its POISON_STRIKES-th
   * strike in a row. While the pool stops, what a worker could not finish
   * (it was killed at drainTimeout, or gave up writing at its
   * flushTimeout) is dropped as `shutdown`; after a crash while stopping it
   * is given up (`workerLost`).
   */
  rehome (slot, batches, expected, suspect = null) {
    const keep = []
    let poisoned = 0 // strikes of a batch given up as poison: crashes not the slot's
    for (const batch of batches) {
      if (this.state !== 'running') leave(this, batch, expected ? 'shutdown' : 'workerLost')
      else if (suspect !== null && batch === suspect.batch && batch.struck(suspect.cause) >= POISON_STRIKES) poisoned = giveUpPoison(this, batch)
      else keep.push(batch)
    }
    const current = this.current[slot]
    if (current && current.state === 'ready') for (const batch of keep) current.redeliver(batch)
    else if (this.failedSlots.has(slot)) this.adoptOrphans(keep)
    else this.orphans[slot].push(...keep)
    return poisoned
  }

  /**
   * With the disk buffer on and no worker in rotation, the workers that
   * stand for their slots' next ones: each slot's last worker, gone, whose
   * handle forms batches for the slot and hands them to hold() (written to
   * the buffer first). distribute() picks among them as among live workers,
   * so a key keeps its slot. Empty while stopping or when every slot is
   * given up.
   */
  holders () {
    if (this.state !== 'running') return []
    return this.current.filter((h, slot) => h !== null && h.state === 'gone' && !this.failedSlots.has(slot))
  }

  /** Messages held for `slot`'s next worker (what its last one left, and what was formed for it since). */
  heldFor (slot) {
    let n = 0
    for (const batch of this.orphans[slot]) n += batch.count
    const standIn = this.current[slot]
    return standIn && standIn.state === 'gone' ? n + standIn.inFlight : n
  }

  // A batch formed for `slot` while its worker is gone: counted as
  // dispatched to that worker (as what it held when it died is), then held
  // for the slot's next worker with what it left.
  hold (slot, batch) {
    this.retired.dispatched += batch.count
    this.rehome(slot, [batch], false)
  }

  // What is being formed for slots whose worker is gone, to the slots' orphans.
  flushHeld () {
    for (const h of this.current) if (h !== null && h.state === 'gone') h.sendPending()
  }

  // All to one worker, in order: see the class comment.
  adoptOrphans (batches) {
    const heir = this.rotation[0]
    for (const batch of batches) {
      if (heir) heir.redeliver(batch)
      else leave(this, batch, 'workerLost')
    }
  }

  // Crash-loop protection: the delay doubles per crash within the window;
  // past maxCrashes in the window the slot is given up (crashHistory: not
  // for the crashes of a batch given up as poison).
  scheduleRespawn (slot, poisoned = 0) {
    const { respawnDelay, maxCrashes, crashWindow } = this.options
    const crashes = this.crashes[slot] = crashHistory(this.crashes[slot], crashWindow, poisoned)
    if (crashes.length > maxCrashes) return this.abandonSlot(slot, crashes.length)
    const delay = Math.min(respawnDelay * 2 ** (crashes.length - 1), 30000)
    const timer = setTimeout(() => this.respawn(slot, timer), delay)
    this.respawnTimers.add(timer)
  }

  respawn (slot, timer) {
    this.respawnTimers.delete(timer)
    if (this.state !== 'running' || this.spawning[slot] > 0 || (this.current[slot] && this.current[slot].state === 'ready')) return
    this.spawn(slot).then((handle) => {
      this.respawns++
      this.emit('workerRespawned', handle)
    }, (err) => {
      this.logger.error({ err, slot }, 'worker respawn failed')
      if (this.state === 'running') this.scheduleRespawn(slot)
    })
  }

  abandonSlot (slot, crashes) {
    if (this.current[slot] && this.current[slot].state === 'gone') this.current[slot].sendPending()
    this.failedSlots.add(slot)
    this.adoptOrphans(this.orphans[slot].splice(0))
    this.emit('slotFailed', slot)
    this.logger.error({ slot, crashes }, 'worker is crash-looping; slot given up')
    if (this.rotation.length === 0 && this.respawnTimers.size === 0) {
      this.emit('error', new WorkerDownError(`every worker is down (slot ${slot} crashed ${crashes} times within ${this.options.crashWindow} ms)`, { slot }))
    }
  }

  /** Rolling restart: per slot, the new worker is ready before the old one drains and leaves. */
  async restart () {
    for (let slot = 0; slot < this.current.length; slot++) {
      if (this.state !== 'running') return
      const old = this.current[slot]
      try {
        await this.spawn(slot)
      } catch (err) {
        // Its new worker died starting, the old one gone too (its respawn was left to this spawn).
        const now = this.current[slot]
        if (this.state === 'running' && this.spawning[slot] === 0 && (!now || now.state === 'gone') && !this.failedSlots.has(slot)) this.scheduleRespawn(slot)
        throw err
      }
      if (this.failedSlots.delete(slot)) this.crashes[slot] = [] // a slot given up is back, its crashes forgotten
      if (old) await this.retire(old)
      this.rollingRestarts++
    }
  }

  /**
   * Asks a worker to finish: everything sent before SHUTDOWN is processed
   * (the channel is ordered), then it flushes, closes and exits.
   */
  retire (handle) {
    if (handle.state === 'gone') return Promise.resolve()
    if (handle.retiring) return handle.retiring
    this.takeOutOfRotation(handle)
    handle.state = 'closing'
    handle.sendPending()
    const gone = new Promise((resolve) => handle.once('gone', resolve))
    handle.send([ipc.SHUTDOWN])
    const timer = setTimeout(() => this.forceKill(handle), this.options.drainTimeout)
    handle.retiring = gone.finally(() => clearTimeout(timer))
    return handle.retiring
  }

  forceKill (handle) {
    this.logger.error({ worker: handle.id, inFlight: handle.inFlight, drainTimeout: this.options.drainTimeout }, 'worker did not drain in time; killing it')
    handle.clusterWorker.process.kill('SIGKILL')
  }

  /** receive 'reuseport': the kernel drops of every worker's socket, as last reported. */
  kernelDrops () {
    let drops = this.retiredKernelDrops
    for (const h of this.live) drops += h.kernelDrops
    return drops
  }

  /** receive 'reuseport': the workers' shared address (null when none is up). */
  address () {
    const bound = this.rotation.find((h) => h.address)
    return bound ? bound.address : null
  }

  /**
   * receive 'reuseport': every live worker closes its own socket, reading
   * its queue empty first, and reports its final counts. What they read is
   * processed on; retire() (stop) waits for that.
   */
  async unlisten () {
    const handles = [...this.live].filter((h) => h.state === 'ready' || h.state === 'closing')
    await Promise.all(handles.map((h) => {
      const done = whenAny(h, ['unlistened', 'gone'])
      return h.send([ipc.UNLISTEN]) ? done : Promise.resolve()
    }))
  }

  /** Drains and stops every worker; idempotent. */
  async stop () {
    if (this.state === 'stopped' || this.state === 'idle') return
    this.flushHeld()
    this.state = 'stopping'
    for (const timer of this.respawnTimers) clearTimeout(timer)
    this.respawnTimers.clear()
    // Batches waiting for a respawning slot's worker stay in the buffer (not another slot's: affinity); without it, adopted.
    for (const batches of this.orphans) for (const batch of batches.splice(0)) this.journal !== null ? leave(this, batch, 'shutdown') : this.adoptOrphans([batch])
    // Every live worker, an old one a rolling restart still drains too: stop() resolved with its messages in flight.
    await Promise.all([...this.live].map((h) => this.retire(h)))
    this.progress.close()
    this.state = 'stopped'
  }
}

module.exports = WorkerPool
