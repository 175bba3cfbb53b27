'use strict'

// lib/shared/backoff.js: --retry-delay accepts up to 1 h, but a first delay
// over 5 minutes was cut to 5 minutes.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const Backoff = require('../../lib/shared/backoff')

test('backoff: ×1.5 per failure up to 5 minutes; a first delay longer than that is kept, never cut', () => {
  const short = new Backoff({ initial: 1000 })
  assert.deepEqual(Array.from({ length: 4 }, () => short.next()), [1000, 1500, 2250, 3375])
  const capped = new Backoff({ initial: 200000 })
  assert.deepEqual([capped.next(), capped.next(), capped.next()], [200000, 300000, 300000])
  const long = new Backoff({ initial: 600000 })
  assert.deepEqual([long.next(), long.next()], [600000, 600000])
  long.reset()
  assert.equal(long.next(), 600000)
})
