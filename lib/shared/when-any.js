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

module.exports = { whenAny }
