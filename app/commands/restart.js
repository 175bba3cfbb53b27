'use strict'

const launcher = require('../launcher')
const { takePositionals, launcherOptions, usageError } = require('./common')

const USAGE = 'collector restart <name>'

/** `collector restart <name>`: rolling restart of the workers; waits until done. */
async function run (argv) {
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  if (rest.length) throw usageError(`unexpected argument(s): ${rest.join(' ')}\nusage: ${USAGE}`)
  await launcher.restart(name, launcherOptions())
  process.stdout.write(`restarted the workers of ${name}, one at a time\n`)
  return 0
}

module.exports = { run, USAGE }
