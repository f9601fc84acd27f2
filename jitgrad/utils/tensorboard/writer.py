"""``SummaryWriter`` and ``FileWriter``, as ``torch.utils.tensorboard.writer``: they write
TensorBoard event files (TFRecord-framed ``Event`` protocol buffers) without TensorBoard,
TensorFlow or protobuf installed."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from . import _proto as pb
from ._convert import figure_to_image, make_np
from ._embedding import embedding_info, make_mat, make_sprite, make_tsv, projector_config_text, \
    write_pbtxt
from ._graph import graph
from ._record import EventFileWriter
from .summary import (
    audio,
    custom_scalars,
    histogram,
    histogram_raw,
    hparams,
    image,
    image_boxes,
    mesh,
    pr_curve,
    pr_curve_raw,
    scalar,
    tensor_proto,
    text,
    video,
)

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes serialized ``Event`` and ``Summary`` protocol buffers to a new event file in
    ``log_dir``, queued and written asynchronously (see ``SummaryWriter`` for the arguments).
    """

    def __init__(self, log_dir: Any, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        log_dir = str(log_dir)
        self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The directory where the event file is written."""
        return self.event_writer.get_logdir()

    def add_event(self, event: bytes, step: int | None = None,
                  walltime: float | None = None) -> None:
        """Adds a serialized ``Event``, stamped with ``walltime`` (default now) and ``step``.

        The stamps are appended as fields, which a protobuf parser merges over any the event
        already holds (the last value of a field wins).

        Args:
            event: The event's bytes.
            step: The global step to record, if any.
            walltime: Seconds since the epoch (default ``time.time()``).
        """
        stamped = bytes(event) + pb.f_double(1, time.time() if walltime is None else walltime)
        if step is not None:
            stamped += pb.f_varint(2, int(step))
        self.event_writer.add_event(stamped)

    def add_summary(self, summary: bytes, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Wraps a serialized ``Summary`` in an ``Event`` and adds it.

        Args:
            summary: The summary's bytes.
            global_step: The global step to record, if any.
            walltime: Seconds since the epoch (default ``time.time()``).
        """
        self.add_event(pb.f_bytes(5, summary), global_step, walltime)

    def add_graph(self, graph_profile: tuple[bytes, bytes], walltime: float | None = None) -> None:
        """Adds a serialized ``GraphDef`` and its ``RunMetadata`` (tagged ``"step1"``).

        Args:
            graph_profile: ``(graph_def, run_metadata)`` bytes.
            walltime: Seconds since the epoch (default ``time.time()``).
        """
        graph_def, run_metadata = graph_profile
        self.add_event(pb.f_bytes(4, graph_def), None, walltime)
        tagged = pb.f_str(1, "step1") + pb.f_bytes(2, run_metadata)
        self.add_event(pb.f_bytes(8, tagged), None, walltime)

    def flush(self) -> None:
        """Writes the queued events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Writes the queued events and closes the event file."""
        self.event_writer.close()


class SummaryWriter:
    """Writes scalars, histograms, images, videos, audio, text, graphs, embeddings,
    hyperparameters, curves and meshes to event files in ``log_dir`` for TensorBoard, as
    ``torch.utils.tensorboard.SummaryWriter``.

    Args:
        log_dir: The directory; default ``runs/<CURRENT_DATETIME_HOSTNAME><comment>``.
        comment: Suffix of the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: Events of a crashed run from this step on are hidden by TensorBoard.
        max_queue: How many events wait before an add writes them to disk.
        flush_secs: How often, in seconds, pending events are written to disk.
        filename_suffix: Suffix of the event file names.
    """

    def __init__(self, log_dir: Any = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()
        v = 1e-12
        buckets, neg_buckets = [], []
        while v < 1e20:
            buckets.append(v)
            neg_buckets.append(-v)
            v *= 1.1
        self.default_bins = neg_buckets[::-1] + [0] + buckets

    def _get_file_writer(self) -> FileWriter:
        """The default FileWriter; a new one (a new event file) after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                most_recent_step = self.purge_step
                self.file_writer.add_event(
                    pb.f_varint(2, most_recent_step) + pb.f_str(3, "brain.Event:2"))
                self.file_writer.add_event(
                    pb.f_varint(2, most_recent_step)
                    + pb.f_bytes(7, pb.session_log(pb.SESSION_LOG_START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory where event files are written."""
        return self.log_dir

    def add_hparams(self, hparam_dict: dict, metric_dict: dict,
                    hparam_domain_discrete: dict | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Adds a set of hyperparameters and their metrics, to compare runs in TensorBoard's
        HPARAMS tab; written to the sub-directory ``run_name`` (default the current time).

        Args:
            hparam_dict: Hyperparameter name -> bool, str, int, float or None.
            metric_dict: Metric tag -> value, also logged as scalars in the sub-run.
            hparam_domain_discrete: Name -> list of the values it can take.
            run_name: The sub-run's name.
            global_step: The global step to record.

        Raises:
            TypeError: if ``hparam_dict`` or ``metric_dict`` is not a dict.
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            w_hp.file_writer.add_summary(exp, global_step)
            w_hp.file_writer.add_summary(ssi, global_step)
            w_hp.file_writer.add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Adds a scalar.

        Args:
            tag: Data identifier.
            scalar_value: A number, NumPy scalar or one-element Tensor.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
            new_style: Write a tensor (faster to load) instead of ``simple_value``.
            double_precision: With ``new_style``, keep float64.
        """
        summary = scalar(tag, scalar_value, new_style=new_style,
                         double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict,
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Adds several scalars under ``main_tag``, each series into its own sub-directory
        ``<log_dir>/<main_tag>_<tag>`` (one writer each), so TensorBoard draws them in one chart.

        Args:
            main_tag: The parent name of the tags.
            tag_scalar_dict: Tag -> value.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, scalar_value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            if self.all_writers is None:
                raise AssertionError("self.all_writers is None")
            if fw_tag in self.all_writers:
                fw = self.all_writers[fw_tag]
            else:
                fw = FileWriter(fw_tag, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[fw_tag] = fw
            fw.add_summary(scalar(main_tag, scalar_value), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        """Adds a tensor's values and shape (TensorBoard's ``tensor`` plugin).

        Args:
            tag: Data identifier.
            tensor: The Tensor.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Adds a histogram of ``values``.

        Args:
            tag: Data identifier.
            values: A Tensor or array.
            global_step: Global step value to record.
            bins: ``"tensorflow"`` (exponential buckets, as TensorFlow) or anything
                ``numpy.histogram`` takes (``"auto"``, ``"fd"``, a count, edges).
            walltime: Seconds after the epoch (default ``time.time()``).
            max_bins: Merge neighbouring buckets down to at most this many.
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,
                          sum_squares: float, bucket_limits: Any, bucket_counts: Any,
                          global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Adds a histogram from precomputed statistics and buckets.

        Raises:
            ValueError: if ``bucket_limits`` and ``bucket_counts`` differ in length.
        """
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
            global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Adds an image (uint8, or floats in [0, 1]), PNG-encoded.

        Args:
            tag: Data identifier.
            img_tensor: The image, laid out as ``dataformats`` says.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
            dataformats: ``"CHW"``, ``"HWC"``, ``"HW"`` or another order of those letters.
        """
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Adds a batch of images, tiled into one grid image (8 a row).

        Args:
            tag: Data identifier.
            img_tensor: The images, laid out as ``dataformats`` says.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
            dataformats: ``"NCHW"``, ``"NHWC"`` or another order of those letters.
        """
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any,
                             global_step: int | None = None, walltime: float | None = None,
                             rescale: float = 1, dataformats: str = "CHW",
                             labels: list | None = None) -> None:
        """Adds an image with boxes drawn on it; needs Pillow (as torch) to draw.

        Args:
            tag: Data identifier.
            img_tensor: The image, laid out as ``dataformats`` says.
            box_tensor: ``(N, 4)`` boxes as ``(xmin, ymin, xmax, ymax)`` pixels.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
            rescale: Scale factor of the stored image.
            dataformats: The image's layout.
            labels: One label per box (ignored unless there are N).
        """
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None
        self._get_file_writer().add_summary(
            image_boxes(tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats,
                        labels=labels), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None,
                   close: bool = True, walltime: float | None = None) -> None:
        """Renders a matplotlib figure (or a list of them) into an image; needs matplotlib.

        Args:
            tag: Data identifier.
            figure: A figure or a list of figures.
            global_step: Global step value to record.
            close: Close the figure(s) afterwards.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        if isinstance(figure, list):
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="NCHW")
        else:
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="CHW")

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None,
                  fps: float = 4, walltime: float | None = None) -> None:
        """Adds videos as one animated GIF (a batch is tiled into a grid).

        Args:
            tag: Data identifier.
            vid_tensor: ``(N, T, C, H, W)`` videos, uint8 or floats in [0, 1].
            global_step: Global step value to record.
            fps: Frames per second.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        self._get_file_writer().add_summary(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> None:
        """Adds a 1-D mono signal in [-1, 1] as 16-bit WAV audio.

        Args:
            tag: Data identifier.
            snd_tensor: The signal, shape ``(1, L)`` or ``(L,)``.
            global_step: Global step value to record.
            sample_rate: Samples per second.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        self._get_file_writer().add_summary(audio(tag, snd_tensor, sample_rate=sample_rate),
                                            global_step, walltime)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Adds the graph of ``model`` run on ``input_to_model`` (TensorBoard's GRAPHS tab):
        each top-level call the forward makes, scoped by the module that made it.

        Args:
            model: The module to draw.
            input_to_model: An input Tensor or a tuple of them.
            verbose: Print how many nodes were recorded.
            use_strict_trace: Accepted for torch's signature.
        """
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose,
                                                use_strict_trace))

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Adds text (markdown), under the tag ``tag + "/text_summary"``.

        Args:
            tag: Data identifier.
            text_string: The text.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    @staticmethod
    def _encode(rawstr: str) -> str:
        retval = rawstr.replace("%", f"%{ord('%'):02x}")
        retval = retval.replace("/", f"%{ord('/'):02x}")
        return retval.replace("\\", "%5c")

    def add_embedding(self, mat: Any, metadata: list | None = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: list | None = None) -> None:
        """Adds data for the embedding projector: ``<log_dir>/<step:05d>/<tag>/`` gets
        ``tensors.tsv``, ``metadata.tsv`` and ``sprite.png``, and ``projector_config.pbtxt``
        lists every embedding this writer added.

        Args:
            mat: An ``(N, D)`` Tensor or array, one row per data point.
            metadata: N labels (or N rows with ``metadata_header``).
            label_img: ``(N, C, H, W)`` images of the data points.
            global_step: Global step value to record (default 0).
            tag: Name of the embedding.
            metadata_header: Column names of multi-column metadata.

        Raises:
            NotADirectoryError: if the embedding's directory exists as a file.
            AssertionError: if the counts of labels or images are not N, or ``mat`` is not 2-D.
        """
        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        if os.path.exists(save_path):
            if os.path.isdir(save_path):
                print("warning: Embedding dir exists, did you set global_step for "
                      "add_embedding()?")
            else:
                raise NotADirectoryError(
                    f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError(
                "mat should be 2D, where mat.size(0) is the number of data points")
        make_mat(mat, save_path)
        if not hasattr(self, "_projector_config"):
            self._projector_config: list = []
        self._projector_config.append(
            embedding_info(metadata, label_img, subdir, global_step, tag))
        write_pbtxt(self._get_file_writer().get_logdir(),
                    projector_config_text(self._projector_config))

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Any = None, walltime: float | None = None) -> None:
        """Adds a precision-recall curve of binary ``labels`` against ``predictions`` in [0, 1].

        Args:
            tag: Data identifier.
            labels: Ground truth, 0/1 or bool.
            predictions: Probabilities of the positive class.
            global_step: Global step value to record.
            num_thresholds: Thresholds of the curve (at most 127).
            weights: Per-example weights.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        labels, predictions = make_np(labels), make_np(predictions)
        self._get_file_writer().add_summary(
            pr_curve(tag, labels, predictions, num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any,
                         recall: Any, global_step: int | None = None, num_thresholds: int = 127,
                         weights: Any = None, walltime: float | None = None) -> None:
        """Adds a precision-recall curve from precomputed counts, precision and recall."""
        self._get_file_writer().add_summary(
            pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, num_thresholds, weights),
            global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags: list, category: str = "default",
                                          title: str = "untitled") -> None:
        """Lays out one multi-line chart of ``tags`` in the custom-scalars plugin."""
        layout = {category: {title: ["Multiline", tags]}}
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars_marginchart(self, tags: list, category: str = "default",
                                       title: str = "untitled") -> None:
        """Lays out one margin chart of ``[value, lower, upper]`` tags.

        Raises:
            AssertionError: unless there are exactly 3 tags.
        """
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        layout = {category: {title: ["Margin", tags]}}
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars(self, layout: dict) -> None:
        """Lays out the custom-scalars plugin: ``{category: {chart: [kind, tags]}}``."""
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: dict | None = None, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Adds a 3-D mesh or point cloud for TensorBoard's mesh plugin.

        Args:
            tag: Data identifier.
            vertices: ``(B, N, 3)`` vertex coordinates.
            colors: ``(B, N, 3)`` RGB colors (0-255) of the vertices.
            faces: ``(B, F, 3)`` vertex indices of the triangles.
            config_dict: three.js configuration (camera, lights, material), stored as JSON.
            global_step: Global step value to record.
            walltime: Seconds after the epoch (default ``time.time()``).
        """
        self._get_file_writer().add_summary(mesh(tag, vertices, colors, faces, config_dict),
                                            global_step, walltime)

    def flush(self) -> None:
        """Writes every writer's pending events to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Writes the pending events and closes the event files; a second close does nothing
        and a later add opens a new event file."""
        if self.all_writers is None:
            return  # ignore double close
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()
