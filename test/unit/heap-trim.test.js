'use strict'

// The workers' malloc_trim (native/malloc_trim.c through
// lib/worker/heap-trim.js), on a heap with holes made on purpose: buffers
// below glibc's mmap threshold come from its heap, every other one is freed,
// and the last one kept stops glibc from giving back the top on its own. A
// child process, so that the holes are its own and its resident set is read
// alone.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { canTrim } = require('../../lib/worker/heap-trim')

const PROBE = `
const fs = require('node:fs')
const { trimNow } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'worker', 'heap-trim.js'))})
const rss = () => Number(fs.readFileSync('/proc/self/statm', 'utf8').split(' ')[1]) * 4096
const SIZE = 60 * 1024 // under glibc's 128 KiB mmap threshold: from the heap
const kept = []
let freed = []
for (let i = 0; i < 600; i++) {
  const b = Buffer.allocUnsafeSlow(SIZE).fill(i & 255) // touched: resident
  if (i % 2 === 1) kept.push(b); else freed.push(b)
}
freed = null
const settle = () => new Promise((resolve) => setTimeout(resolve, 50))
;(async () => {
  for (let i = 0; i < 3; i++) { globalThis.gc(); await settle() } // backing stores freed
  const holes = rss()
  await settle()
  const stillHoles = rss() // without a trim glibc keeps them
  const released = trimNow()
  const after = rss()
  const sum = kept.reduce((n, b) => n + b[0], 0) // the kept buffers stay alive to here
  process.stdout.write(JSON.stringify({ holes, stillHoles, released, after, sum }))
})()
`

test('malloc_trim gives the holes of a fragmented heap back: the resident set drops by most of what was freed', { skip: process.platform !== 'linux' && 'glibc only' }, () => {
  assert.equal(canTrim(), true, 'native/build/malloc_trim.node does not load: run `node native/build.js`')
  const run = spawnSync(process.execPath, ['--expose-gc', '-e', PROBE], { encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  const { holes, stillHoles, released, after } = JSON.parse(run.stdout)
  const freedBytes = 300 * 60 * 1024 // 17.6 MiB in 300 holes of 60 KiB
  assert.ok(holes - stillHoles < freedBytes / 4, `glibc kept the holes before the trim (${holes} then ${stillHoles} bytes resident)`)
  assert.equal(released, true, 'malloc_trim said it gave nothing back')
  assert.ok(holes - after > freedBytes * 0.6, `the trim gave back ${holes - after} of the ${freedBytes} bytes freed (resident ${holes} → ${after})`)
})
