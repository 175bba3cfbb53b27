import * as path from 'node:path'
import { MongoCollector } from 'collector-cluster'
import type { MongoCollectorOptions } from 'collector-cluster'

export interface TallyOptions extends MongoCollectorOptions { unit?: 'events' | 'hits' }

export class TallyCollector extends MongoCollector {
  static workerOptionKeys = [...MongoCollector.workerOptionKeys, 'unit']

  constructor (options: TallyOptions = {}) {
    super({ name: 'tally', worker: path.join(__dirname, 'worker.js'), ...options })
    this.on('listening', (address) => this.logger.info({ address }, 'tally listening'))
  }

  protected async doStart (): Promise<void> {
    this.logger.info({ unit: this.options.workerOptions.unit }, 'tally starting')
    await super.doStart()
  }
}
