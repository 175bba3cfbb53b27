'use strict'

const launcher = require('../launcher')
const { takePositionals, launcherOptions, usageError } = require('./common')

const USAGE = 'collector delete <name>'

/** `collector delete <name>`: stop (draining) and forget it. */
async function run (argv) {
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  if (rest.length) throw usageError(`unexpected argument(s): ${rest.join(' ')}\nusage: ${USAGE}`)
  await launcher.delete(name, launcherOptions())
  process.stdout.write(`deleted ${name}\n`)
  return 0
}

module.exports = { run, USAGE }
