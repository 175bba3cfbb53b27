'use strict'

// The master's Node flags its workers take: not code given on the command
// line, not the test runner's flags or their values.
const test = require('node:test')
const assert = require('node:assert/strict')
const { ownNodeArgs } = require('../../lib/master/worker-start')

test('code flags and their code, and test runner flags and their values, stay with the master', () => {
  const cases = [
    [['-e', 'code', '--max-old-space-size=100'], ['--max-old-space-size=100']],
    [['-p', '-e', 'code'], []],
    [['--print', '-e', 'code'], []],
    [['-pe', 'code'], []],
    [['--eval=code', '--inspect'], ['--inspect']],
    [['--test', '--test-name-pattern', 'foo', '--expose-gc'], ['--expose-gc']],
    [['--test-timeout=5', '--stack-size=2000'], ['--stack-size=2000']],
    [['-i'], []]
  ]
  for (const [execArgv, kept] of cases) assert.deepEqual(ownNodeArgs(execArgv), kept, JSON.stringify(execArgv))
})
