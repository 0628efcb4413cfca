// The CPU backend's part of loading a model (model.h's WeightPreparer):
// every matrix its kernel table has interleaved kernels for is repacked
// into that layout (kernels/weight_interleave.h), in one owned buffer on
// huge pages, and the file pages it came from are released as the copy
// goes. Outputs are bit-identical either way; interleaved is faster.
#pragma once

#include "kernels/kernel_table.h"
#include "model/model.h"

namespace omnibus {

class WeightRepacker final : public WeightPreparer {
 public:
  // `table`: the kernels the model will run with (a table without
  // interleaved kernels repacks nothing). Must outlive the call to prepare.
  explicit WeightRepacker(const KernelTable& table = kernels()) : table_(table) {}
  void prepare(ModelWeights& weights, const GgufFile& file, AlignedBuffer<uint8_t>& owned) const override;

 private:
  const KernelTable& table_;
};

}  // namespace omnibus
