"""Multi-pass encoding of one file on a Dask cluster (pipelines/multipass-farm.py): the job's code.

The worker module is pickled by value (cloudpickle), so that Dask workers need neither this
package nor this repository: only GStreamer and swiftvt-farm."""
import cloudpickle

from . import worker

cloudpickle.register_pickle_by_value(worker)
