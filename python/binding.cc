// gossipd._gossipd: the C++ member a Python process trains with
// (daemon/hosted), bound with pybind11. No torch headers: tensors reach
// it as NumPy views of its arena (torch.from_numpy shares the memory).
// Every call that waits releases the GIL; no C++ thread calls into Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/config/cli.h"
#include "daemon/config/run_options.h"
#include "daemon/hosted/hosted_member.h"
#include "daemon/worker/mode_set.h"

namespace py = pybind11;
using gossipd::daemon::HostedError;
using gossipd::daemon::HostedLayout;
using gossipd::daemon::HostedMember;

namespace {

// A NumPy view of `s` that keeps `owner` (the member) alive while it lives.
py::array_t<float> view(std::span<float> s, py::handle owner) {
  return py::array_t<float>({static_cast<py::ssize_t>(s.size())}, {static_cast<py::ssize_t>(sizeof(float))},
                            s.data(), owner);
}

HostedLayout layout_of(const std::vector<std::pair<std::string, size_t>>& segments,
                       const py::array_t<float, py::array::c_style | py::array::forcecast>& initial,
                       size_t steps_per_epoch, size_t state_per_param,
                       const py::array_t<float, py::array::c_style | py::array::forcecast>& initial_state) {
  HostedLayout l;
  size_t offset = 0;
  for (const auto& [name, length] : segments) {
    l.segments.push_back({name, offset, length});
    offset += length;
  }
  l.initial.assign(initial.data(), initial.data() + initial.size());
  l.steps_per_epoch = steps_per_epoch;
  l.state_per_param = state_per_param;
  l.initial_state.assign(initial_state.data(), initial_state.data() + initial_state.size());
  return l;
}

std::unique_ptr<HostedMember> make_member(
    const std::vector<std::string>& args, const std::vector<std::pair<std::string, size_t>>& segments,
    const py::array_t<float, py::array::c_style | py::array::forcecast>& initial, size_t steps_per_epoch,
    size_t state_per_param,
    const py::array_t<float, py::array::c_style | py::array::forcecast>& initial_state) {
  HostedLayout layout = layout_of(segments, initial, steps_per_epoch, state_per_param, initial_state);
  py::gil_scoped_release release;
  return std::make_unique<HostedMember>(args, std::move(layout));
}

py::dict info_dict(const gossipd::daemon::HostedInfo& i) {
  py::dict d;
  d["id"] = i.id;
  d["endpoint"] = i.endpoint;
  d["http_port"] = i.http_port;
  d["joined"] = i.joined;
  d["start_round"] = i.start_round;
  return d;
}

}  // namespace

PYBIND11_MODULE(_gossipd, m) {
  m.doc() = "gossipd's member for a process that computes its own model (see gossipd.torch)";
  m.def(
      "default_mode", [] { return std::string(gossipd::daemon::kDefaultMode); },
      "The mode a Worker trains with when none is named: gossipd run's default --algo");
  m.def(
      "host_averages_state",
      [](const std::string& algo) { return gossipd::daemon::ModeSet().find(algo).host_averages_state(); },
      py::arg("algo"),
      "Whether a Worker of this algo averages the optimizer's state with the parameters by default "
      "(DistributedOptimizer's average_state)");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gossipd::daemon::UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const HostedError& e) {
      PyErr_SetString(e.timed_out() ? PyExc_TimeoutError : PyExc_RuntimeError, e.what());
    }
  });
  py::class_<HostedMember>(m, "Member")
      .def(py::init(&make_member), py::arg("args"), py::arg("segments"), py::arg("initial"),
           py::arg("steps_per_epoch"), py::arg("state_per_param") = 1,
           py::arg("initial_state") = py::array_t<float>(0),
           "Starts a member with gossipd run's flags over a model of these (name, length) segments, its "
           "optimizer keeping state_per_param floats a parameter (initial_state: their start; empty: zeros)")
      .def(
          "params", [](py::object self) { return view(self.cast<HostedMember&>().arena().params, self); },
          "The parameters: a float32 view of the arena")
      .def(
          "grads", [](py::object self) { return view(self.cast<HostedMember&>().arena().grads, self); },
          "The gradients the allreduce averages")
      .def(
          "optimizer_state",
          [](py::object self) { return view(self.cast<HostedMember&>().arena().optimizer_state, self); },
          "The optimizer's state (SGD's momentum buffers): joins and checkpoints carry it")
      .def(
          "wait_ready",
          [](HostedMember& h) {
            gossipd::daemon::HostedInfo i;
            {
              py::gil_scoped_release release;  // the dict below needs it back
              i = h.wait_ready();
            }
            return info_dict(i);
          },
          "Waits until training may start (the others met, or joined)")
      .def("info", [](HostedMember& h) { return info_dict(h.info()); })
      .def(
          "begin_step",
          [](HostedMember& h, double loss, int correct, int samples) {
            return h.rendezvous().begin_step(h.step_timeout(), {loss, correct, samples});
          },
          py::arg("loss") = 0.0, py::arg("correct") = 0, py::arg("samples") = 0,
          py::call_guard<py::gil_scoped_release>(),
          "The gradients are ready (of a batch with this loss, correct and samples): returns once the "
          "optimizer may apply them (after an allreduce)")
      .def(
          "set_evaluation",
          [](HostedMember& h, double accuracy, double loss, size_t samples) {
            h.rendezvous().set_evaluation({loss, accuracy, samples});
          },
          py::arg("accuracy"), py::arg("loss") = 0.0, py::arg("samples") = 0,
          "The host's latest test figures: the member's evaluations (/status, --metrics-out) report them")
      .def(
          "end_step", [](HostedMember& h) { h.rendezvous().end_step(h.step_timeout()); },
          py::call_guard<py::gil_scoped_release>(), "Applied: returns once the protocol's round is done")
      .def("round", &HostedMember::round, "Training rounds (steps) done")
      .def("one_replica", &HostedMember::one_replica,
           "Whether every member holds the one model exactly: the buffers are then averaged with the "
           "gradients")
      .def("finish", &HostedMember::finish, py::call_guard<py::gil_scoped_release>(),
           "Between two steps: ends training with the members' exact average, then closes; returns the "
           "members averaged (0: none taken)")
      .def("close", &HostedMember::close, py::call_guard<py::gil_scoped_release>(),
           "Leaves the cluster and stops the member's threads");
}
