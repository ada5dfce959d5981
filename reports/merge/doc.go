// Package merge combines the shard directories of one storm (storm --shard
// i/n) into one storm directory (stormctl merge): every shard's runs,
// histories, final logs and timelines, a summary rebuilt from them, and a
// check that each cell's merged counts, read back, are the sum of the
// shards'. That the shards are of one storm is the storm package's check
// (stormdir.MergeMeta).
package merge
