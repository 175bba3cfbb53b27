import { TallyCollector } from './collector'
import { TallyConfig } from './config'

export const Collector = TallyCollector
export const Config = TallyConfig
export const description = 'counts "<name> [n]" datagrams per minute'
