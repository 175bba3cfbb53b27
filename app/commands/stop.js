'use strict'

const launcher = require('../launcher')
const { takePositionals, launcherOptions, usageError } = require('./common')

const USAGE = 'collector stop <name>'

/** `collector stop <name>`: drains, then PM2 marks it stopped. */
async function run (argv) {
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  if (rest.length) throw usageError(`unexpected argument(s): ${rest.join(' ')}\nusage: ${USAGE}`)
  const proc = await launcher.stop(name, launcherOptions())
  process.stdout.write(`stopped ${name} (${proc ? proc.status : 'gone'})\n`)
  return 0
}

module.exports = { run, USAGE }
