'use strict'

// The --help text of an ArgvConfig (configs/help-text.js): a flag without a
// description ran its syntax and details together (`--level <string>choices: a, b`).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ArgvConfig } = require('../..')

test('--help: a flag with no description has its details in the description column, not run into its syntax', () => {
  class Mine extends ArgvConfig {
    static flags = ArgvConfig.extendFlags({ level: { type: 'string', choices: ['a', 'b'], default: 'a' }, need: { type: 'string', alias: 'N', required: true }, told: { type: 'string', description: 'with words', default: 'x' } })
  }
  const text = new Mine(['--need', 'x']).help()
  const line = (flag) => text.split('\n').find((l) => l.includes(flag))
  assert.match(line('--level'), /^ {2}--level <string> +choices: a, b; default: a$/)
  assert.match(line('--need'), /^ {2}-N, --need <string> +required$/)
  const column = line('--told').indexOf('with words')
  assert.equal(line('--level').indexOf('choices'), column, 'the same column as a description')
})
