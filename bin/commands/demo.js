'use strict'

/** `collector demo`: placeholder. */
async function run () {
  process.stdout.write('collector demo: not yet\n')
  return 0
}

module.exports = { run }
