'use strict'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * SIGKILLs one worker of `balancer` every `everyMs` until stopped;
 * `stop(minimum)` lets it go on until it killed at least `minimum` (the
 * caller's timeout bounds that), then resolves with the number killed;
 * `killed()` is the number so far. A kill
 * waits (the tick is skipped) until:
 * - every instance is up (one dead worker at a time: with none left, UDP has
 *   nowhere to go and is dropped as queueFull);
 * - the replacement of the previous victim of each slot has acknowledged at
 *   least what that victim held, so that each kill tests one redelivery.
 *   (Batches used to be given up after three deaths of their holders; a
 *   SIGKILL is no evidence against a batch now, see docs/delivery.md, and
 *   stormLoop below kills without waiting.) On a busy machine a replacement
 *   can take seconds to store what it inherited, hence `stop(minimum)`.
 *   Once nothing is in flight anywhere, nothing is owed: the victim's
 *   batches may have gone to another worker, and with the input over its
 *   heir would never come to store as much (stop(minimum) waited for ever).
 * It ends, whatever is owed, once the balancer is stopping: a test that
 * failed before stop() leaves no loop keeping its file's process alive.
 * Used by the delivery tests and benchmarks/chaos.js.
 */
function killLoop (balancer, everyMs) {
  let stopped = false
  let minimum = 0
  let killed = 0
  const owed = new Map() // slot → { pid, held } of the last victim there
  const done = (async () => {
    while (!stopped || killed < minimum) {
      await sleep(everyMs)
      if ((stopped && killed >= minimum) || ended(balancer)) break
      const stats = await balancer.stats().catch((err) => { if (!ended(balancer)) throw err })
      if (ended(balancer)) break
      const workers = stats.workers.filter((w) => w.state === 'ready')
      if (workers.length < balancer.options.instances || !settledInheritances(workers, owed)) continue
      const victim = workers[killed % workers.length]
      try {
        process.kill(victim.pid, 'SIGKILL')
        owed.set(victim.slot, { pid: victim.pid, held: victim.inFlight })
        killed++
      } catch {}
    }
    return killed
  })()
  return { stop: (atLeast = 0) => { stopped = true; minimum = atLeast; return done }, killed: () => killed }
}

// Whether each slot's replacement acknowledged what its killed predecessor
// held (redelivered first, and acknowledgements come in order).
function settledInheritances (workers, owed) {
  if (workers.every((w) => w.inFlight === 0)) owed.clear()
  for (const [slot, { pid, held }] of owed) {
    const heir = workers.find((w) => w.slot === slot && w.pid !== pid)
    if (!heir || heir.processed + heir.failed < held) return false
    owed.delete(slot)
  }
  return true
}

/**
 * A respawn storm, as an operator's script or the OOM killer makes one:
 * SIGKILLs a ready worker of `balancer` every `everyMs`, whether or not the
 * others are up and whatever its predecessor left it (unlike killLoop).
 * With one or two instances the rotation is often empty. `stop()` resolves
 * with the number killed.
 */
function stormLoop (balancer, everyMs) {
  let stopped = false
  let killed = 0
  const done = (async () => {
    while (!stopped) {
      await sleep(everyMs)
      if (stopped || ended(balancer)) break
      const ready = balancer.pool ? balancer.pool.rotation : []
      const victim = ready[killed % Math.max(1, ready.length)]
      if (!victim) continue
      try {
        process.kill(victim.pid, 'SIGKILL')
        killed++
      } catch {}
    }
    return killed
  })()
  return { stop: () => { stopped = true; return done } }
}

// Whether the balancer is stopping or stopped (its stop() called: by the test, or by its after hook).
const ended = (balancer) => balancer.state === 'stopping' || balancer.state === 'stopped'

/**
 * Rolling restarts of `balancer`'s workers (LoadBalancer#restart), one every
 * `everyMs` after the last ended, until stopped; `stop(minimum)` lets it go
 * on until it made at least `minimum`, then resolves with how many it made.
 */
function restartLoop (balancer, everyMs) {
  let stopped = false
  let minimum = 0
  let restarts = 0
  const done = (async () => {
    while (!stopped || restarts < minimum) {
      await sleep(everyMs)
      if ((stopped && restarts >= minimum) || ended(balancer)) break
      await balancer.restart()
      restarts++
    }
    return restarts
  })()
  return { stop: (atLeast = 0) => { stopped = true; minimum = atLeast; return done } }
}

module.exports = { killLoop, stormLoop, restartLoop }
