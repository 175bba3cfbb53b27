'use strict'

const cluster = require('node:cluster')
const path = require('node:path')
const EventEmitter = require('node:events')
const ipc = require('./ipc')
const WorkerHandle = require('./worker-handle')
const WorkerDownError = require('../exceptions/worker-down-error')

const WORKER_ENTRY = path.join(__dirname, 'worker-entry.js')
const STATS_TIMEOUT_MS = 1000

/**
 * Forks and supervises the workers of one balancer. Each worker owns a
 * slot (0..instances-1) that its replacement inherits, so flow affinity
 * survives respawns and rolling restarts. `rotation` lists the ready
 * workers by slot: the list handed to `distribute()`.
 *
 * Events: 'workerExit' (info), 'workerRespawned' (handle), 'orphans'
 * (unsent messages of a dead worker, to dispatch again), 'capacity',
 * 'slotFailed' (slot), 'error' (WorkerDownError: no worker left).
 */
class WorkerPool extends EventEmitter {
  constructor (options, logger) {
    super()
    this.options = options
    this.logger = logger
    this.state = 'idle' // → running → stopping → stopped
    this.current = new Array(options.instances).fill(null)
    this.rotation = []
    this.leader = null
    this.crashes = this.current.map(() => [])
    this.respawnTimers = new Set()
    this.failedSlots = new Set()
    this.lost = 0
    this.respawns = 0
    this.rollingRestarts = 0
    this.statsRequests = 0
    this.live = new Set() // every handle not yet gone, including ones draining
    this.retired = { processed: 0, failed: 0 }
  }

  /** processed/failed/inFlight over every worker this pool ever ran. */
  totals () {
    const totals = { ...this.retired, inFlight: 0 }
    for (const h of this.live) {
      totals.processed += h.processed
      totals.failed += h.failed
      totals.inFlight += h.inFlight
    }
    return totals
  }

  /** Forks every slot; resolves when all are ready, rejects if one fails to start. */
  async start () {
    this.state = 'running'
    const slots = this.current.map((_, slot) => slot)
    const results = await Promise.allSettled(slots.map((slot) => this.spawn(slot)))
    const failure = results.find((r) => r.status === 'rejected')
    if (failure) {
      await this.stop()
      throw failure.reason
    }
  }

  /** Forks a worker for `slot` and puts it in rotation once ready. */
  async spawn (slot) {
    const handle = this.fork(slot)
    await waitReady(handle)
    if (this.state !== 'running') {
      await this.retire(handle)
      throw new WorkerDownError(`worker for slot ${slot} started while the pool was ${this.state}`)
    }
    const previous = this.current[slot]
    this.current[slot] = handle
    handle.state = 'ready'
    this.putInRotation(handle, previous)
    return handle
  }

  fork (slot) {
    const { options } = this
    cluster.setupPrimary({
      exec: WORKER_ENTRY,
      args: ['--collector', options.name, '--slot', String(slot)],
      execArgv: process.execArgv.filter((arg) => !arg.startsWith('--test')),
      serialization: 'advanced'
    })
    const worker = cluster.fork({
      COLLECTOR_WORKER_MODULE: options.worker,
      COLLECTOR_WORKER_OPTIONS: JSON.stringify(options.workerOptions || {}),
      COLLECTOR_NAME: options.name,
      COLLECTOR_SLOT: String(slot)
    })
    const handle = new WorkerHandle(worker, slot, options)
    this.live.add(handle)
    handle.on('log', (level, fields, msg) => this.logWorker(handle, level, fields, msg))
    handle.on('ack', () => this.emit('capacity'))
    worker.on('exit', (code, signal) => this.onExit(handle, code, signal))
    return handle
  }

  logWorker (handle, level, fields, msg) {
    const log = this.logger[level] ? level : 'info'
    this.logger[log]({ ...fields, worker: handle.id, slot: handle.slot, pid: handle.pid }, msg)
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

  // Exactly one worker (the lowest slot in rotation) runs singleton jobs.
  electLeader () {
    const leader = this.rotation[0] || null
    if (leader === this.leader) return
    if (this.leader) this.leader.send([ipc.ROLE, { leader: false }])
    this.leader = leader
    if (leader) leader.send([ipc.ROLE, { leader: true }])
  }

  onExit (handle, code, signal) {
    const expected = handle.state === 'closing'
    handle.state = 'gone'
    this.takeOutOfRotation(handle)
    const orphans = handle.takeUnsent()
    const lost = handle.inFlight
    handle.inFlight = 0
    this.lost += lost
    this.live.delete(handle)
    this.retired.processed += handle.processed
    this.retired.failed += handle.failed
    handle.emit('gone')
    if (expected && lost === 0) return
    this.emit('workerExit', { id: handle.id, slot: handle.slot, pid: handle.pid, code, signal, lost })
    if (orphans.length > 0) this.emit('orphans', orphans)
    if (!expected && this.state === 'running' && this.current[handle.slot] === handle) this.scheduleRespawn(handle.slot)
  }

  // Crash-loop protection: the delay doubles per crash within the window;
  // past maxCrashes in the window the slot is given up.
  scheduleRespawn (slot) {
    const { respawnDelay, maxCrashes, crashWindow } = this.options
    const now = Date.now()
    const crashes = this.crashes[slot].filter((t) => now - t < crashWindow)
    crashes.push(now)
    this.crashes[slot] = crashes
    if (crashes.length > maxCrashes) return this.giveUp(slot, crashes.length)
    const delay = Math.min(respawnDelay * 2 ** (crashes.length - 1), 30000)
    const timer = setTimeout(() => this.respawn(slot, timer), delay)
    this.respawnTimers.add(timer)
  }

  respawn (slot, timer) {
    this.respawnTimers.delete(timer)
    if (this.state !== 'running') return
    this.spawn(slot).then((handle) => {
      this.respawns++
      this.emit('workerRespawned', handle)
    }, (err) => {
      this.logger.error({ err, slot }, 'worker respawn failed')
      if (this.state === 'running') this.scheduleRespawn(slot)
    })
  }

  giveUp (slot, crashes) {
    this.failedSlots.add(slot)
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
      await this.spawn(slot)
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
    this.takeOutOfRotation(handle)
    handle.state = 'closing'
    handle.flush()
    const gone = new Promise((resolve) => handle.once('gone', resolve))
    handle.send([ipc.SHUTDOWN])
    const timer = setTimeout(() => this.forceKill(handle), this.options.drainTimeout)
    return gone.finally(() => clearTimeout(timer))
  }

  forceKill (handle) {
    this.logger.error({ worker: handle.id, inFlight: handle.inFlight, drainTimeout: this.options.drainTimeout }, 'worker did not drain in time; killing it')
    handle.worker.process.kill('SIGKILL')
  }

  /** Drains and stops every worker; idempotent. */
  async stop () {
    if (this.state === 'stopped' || this.state === 'idle') return
    this.state = 'stopping'
    for (const timer of this.respawnTimers) clearTimeout(timer)
    this.respawnTimers.clear()
    const handles = this.current.filter(Boolean)
    await Promise.all(handles.map((h) => this.retire(h)))
    this.state = 'stopped'
  }

  /** Per-worker counters plus what each worker's own stats() reports. */
  async collectStats () {
    const handles = this.current.filter((h) => h && h.state !== 'gone')
    return Promise.all(handles.map((h) => this.askStats(h)))
  }

  askStats (handle) {
    const id = ++this.statsRequests
    return new Promise((resolve) => {
      const finish = (custom) => {
        clearTimeout(timer)
        handle.removeListener('stats', onStats)
        resolve({ ...handle.snapshot(), custom })
      }
      const onStats = (requestId, custom) => { if (requestId === id) finish(custom) }
      const timer = setTimeout(() => finish(null), STATS_TIMEOUT_MS)
      handle.on('stats', onStats)
      if (!handle.send([ipc.STATS_REQ, id])) finish(null)
    })
  }
}

function waitReady (handle) {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      handle.removeListener('ready', onReady)
      handle.removeListener('initFailed', onFailed)
      handle.removeListener('gone', onGone)
    }
    const onReady = () => { cleanup(); resolve(handle) }
    const onFailed = (message) => { cleanup(); reject(new WorkerDownError(`worker failed to start: ${message}`, { slot: handle.slot })) }
    const onGone = () => { cleanup(); reject(new WorkerDownError(`worker for slot ${handle.slot} exited before it was ready`, { slot: handle.slot })) }
    handle.on('ready', onReady)
    handle.on('initFailed', onFailed)
    handle.on('gone', onGone)
  })
}

module.exports = WorkerPool
