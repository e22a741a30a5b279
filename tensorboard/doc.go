// Package tensorboard writes and reads TensorBoard event files: the scalars of a run, one event per logged
// step, in the format TensorBoard's event file loader reads while a run goes on. It needs neither libtorch nor
// a protobuf library: the two messages it uses are encoded by hand.
//
// An event file is a sequence of TFRecord records (tensorflow/core/lib/io/record_writer.cc, record_reader.cc):
//
//	uint64 length (little-endian)
//	uint32 masked CRC32C of the 8 length bytes
//	length bytes of data
//	uint32 masked CRC32C of the data
//
// where the CRC is CRC-32C (Castagnoli) and the mask is ((crc >> 15) | (crc << 17)) + 0xa282ead8
// (tensorflow/core/lib/hash/crc32c.h, Mask). Each record's data is a serialized tensorflow.Event
// (tensorflow/core/util/event.proto): wall_time = 1 (double), step = 2 (int64), file_version = 3 (string,
// "brain.Event:2" in the first record of a file), summary = 5 (tensorflow.Summary). A Summary
// (tensorflow/core/framework/summary.proto) holds repeated Value = 1, and a Value its tag = 1 (string) and
// simple_value = 2 (float). TensorBoard reads any file whose name contains "tfevents".
package tensorboard
