'use strict'

const ipc = require('../shared/ipc')

// How long a worker waits for the master to say what it holds.
const ANSWER_TIMEOUT_MS = 5000

/**
 * The worker's side of ipc.HELD_REQ / HELD_RES (Worker#heldSince): asks the
 * master when it received the oldest message it still holds, and matches
 * each answer to its question.
 */
class HeldSince {
  /** @param {(message: any[]) => boolean} send sends to the master; false when it cannot */
  constructor (send) {
    this.send = send
    this.requests = 0
    this.waiting = new Map() // request id → resolve
  }

  /** Epoch ms; Infinity when the master holds nothing; 0 when it does not answer (gone, or stuck). */
  ask (timeoutMs = ANSWER_TIMEOUT_MS) {
    const id = ++this.requests
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.answer(id, 0), timeoutMs)
      this.waiting.set(id, (since) => {
        clearTimeout(timer)
        resolve(since)
      })
      if (!this.send([ipc.HELD_REQ, id])) this.answer(id, 0)
    })
  }

  /** The master is gone: every question waiting is answered 0 (it cannot say), now. */
  masterGone () {
    for (const id of [...this.waiting.keys()]) this.answer(id, 0)
  }

  /** The master's answer to request `id`: epoch ms, or null when it holds nothing. */
  answer (id, since) {
    const resolve = this.waiting.get(id)
    if (!resolve) return
    this.waiting.delete(id)
    resolve(since === null ? Infinity : since)
  }
}

module.exports = { HeldSince }
