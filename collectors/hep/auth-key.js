'use strict'

const fs = require('node:fs')
const InvalidOptionError = require('../../exceptions/invalid-option-error')

const PASSWORD_ENV = 'COLLECTOR_HEP_PASSWORD'

/**
 * The auth key (chunk 0x0e) agents must send: the first line of `file`,
 * else the environment variable COLLECTOR_HEP_PASSWORD, else null (every
 * packet is taken). The collector reads it at construction, so that a
 * file it cannot read is an InvalidOptionError before anything starts;
 * each worker reads it again.
 */
function readAuthKey (file, env = process.env) {
  if (!file) return env[PASSWORD_ENV] ? env[PASSWORD_ENV] : null
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new InvalidOptionError('hepPasswordFile', file, `cannot be read (${err.code || err.message})`)
  }
  const key = text.split(/\r?\n/)[0]
  if (!key) throw new InvalidOptionError('hepPasswordFile', file, 'is empty: its first line is the auth key')
  return key
}

module.exports = { readAuthKey, PASSWORD_ENV }
