'use strict'

/**
 * The one polling helper of the tests: calls `check()` (may be async) until
 * it returns a truthy value, which it resolves with; fails after `timeout`
 * ms naming `what`.
 * @param {() => any} check
 * @param {{ timeout?: number, interval?: number, what?: string }} [options]
 */
async function waitFor (check, { timeout = 20000, interval = 20, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, interval))
  }
}

module.exports = { waitFor }
