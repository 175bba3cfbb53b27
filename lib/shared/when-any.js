'use strict'

/** Resolves (once) when `emitter` emits any of `events`; the listeners are removed then. */
function whenAny (emitter, events) {
  return new Promise((resolve) => {
    const done = () => {
      for (const event of events) emitter.removeListener(event, done)
      resolve()
    }
    for (const event of events) emitter.on(event, done)
  })
}

/** Settles as `promise` does, or resolves at `deadline` (epoch ms), whichever comes first. */
function raceDeadline (promise, deadline) {
  let timer
  const expired = new Promise((resolve) => { timer = setTimeout(resolve, Math.max(0, deadline - Date.now())) })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}

module.exports = { whenAny, raceDeadline }
