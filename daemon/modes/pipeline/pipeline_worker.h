#pragma once

#include <memory>

#include "daemon/modes/pipeline/pipeline_flags.h"
#include "daemon/worker/worker.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// --algo pipeline: this process is one stage (a range of layers) of one of
// D pipelines, each holding the model replica in K stages
// (daemon/pipeline), as planned when the members meet
// (pipeline_agreement.h) or as the flags fix it. The processes of a
// pipeline sample the same batches (their shard of the data, batch / D
// each), the first stage reads the samples, the last the labels.
// `tags`: the pipeline mode's range (Mode::tags).
std::unique_ptr<Worker> make_pipeline_worker(WorkerContext& context, const PipelineFlags& flags,
                                             protocol::tags::Range tags);

}  // namespace gossipd::daemon
