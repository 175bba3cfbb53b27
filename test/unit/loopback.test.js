'use strict'

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { isLoopback } = require('../../lib/shared/loopback')

test('only loopback addresses count as loopback; a host name that looks like one does not', () => {
  for (const host of ['localhost', '127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', 'LOCALHOST']) assert.equal(isLoopback(host), true, host)
  for (const host of ['0.0.0.0', '::', '10.0.0.1', '127.example.com', '127.0.0.1.nip.io', 'example.com', '::ffff:10.0.0.1']) assert.equal(isLoopback(host), false, host)
})
