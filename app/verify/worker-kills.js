'use strict'

// SIGKILLs the workers of the collector under verification, one every
// `everyMs` while on, as an operator or the OOM killer would. Only a worker
// that has been ready for STABLE_MS: one killed younger counts as a crash
// toward its slot's crash-loop protection (lib/master/worker-pool.js gives a
// slot up past maxCrashes), which is not what verify tests. Readiness comes
// from the stats file, a second old at most, hence the margin.

const STABLE_MS = 1500
const GIVE_UP_MS = 30000 // stop(minimum) waits at most this long for the kills still owed

/**
 * @param {number} everyMs
 * @returns {{ attach(collector): void, pause(): void, resume(): void, stop(minimum: number): Promise<number>, readonly killed: number }}
 */
function workerKills (everyMs) {
  const state = { collector: null, on: false, stopped: false, minimum: 0, killed: 0, deadline: Infinity }
  const readySince = new Map() // pid → when a snapshot first showed it ready
  const victims = new Set()
  const done = (async () => {
    while (!state.stopped || (state.killed < state.minimum && Date.now() < state.deadline)) {
      await new Promise((resolve) => setTimeout(resolve, everyMs))
      if ((!state.on && !state.stopped) || !state.collector) continue
      const snap = await state.collector.snapshot()
      if (!snap) continue
      const victim = pickVictim(snap, readySince, victims, state.killed)
      if (victim === null) continue
      try {
        process.kill(victim, 'SIGKILL')
        victims.add(victim)
        state.killed++
      } catch {} // gone already
    }
    return state.killed
  })()
  return {
    attach (collector) { state.collector = collector },
    pause () { state.on = false },
    resume () { state.on = true },
    stop (minimum = 0) {
      Object.assign(state, { stopped: true, minimum, deadline: Date.now() + GIVE_UP_MS })
      return done
    },
    get killed () { return state.killed }
  }
}

// A worker ready for STABLE_MS and not killed before, the slots in turn; null if none.
function pickVictim (snap, readySince, victims, killed) {
  const ready = snap.stats.workers.filter((w) => w.state === 'ready' && w.pid && !victims.has(w.pid))
  for (const w of ready) if (!readySince.has(w.pid)) readySince.set(w.pid, snap.timestamp)
  const stable = ready.filter((w) => Date.now() - readySince.get(w.pid) >= STABLE_MS)
  if (stable.length === 0) return null
  stable.sort((a, b) => a.slot - b.slot)
  return stable[killed % stable.length].pid
}

module.exports = { workerKills }
