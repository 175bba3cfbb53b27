'use strict'

// How long a start of the embedded Java server may take: a minute, and 4
// minutes per GB of the data file it opens first (lib/mongo/java-server.js).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startTimeoutFor, DB_FILE } = require('../../lib/mongo/java-server')

test('in memory, or no data file yet: a minute; a 2 GB data file: a minute and 8 (sparse, nothing written)', (t) => {
  assert.equal(startTimeoutFor(undefined), 60000)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'java-start-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  assert.equal(startTimeoutFor(dir), 60000)
  const file = path.join(dir, DB_FILE)
  fs.writeFileSync(file, '')
  fs.truncateSync(file, 2e9)
  assert.equal(startTimeoutFor(dir), 60000 + 480000)
})
