"""``jitgrad.utils.tensorboard``: ``SummaryWriter`` writes TensorBoard event files, as
``torch.utils.tensorboard``, in pure Python (no TensorBoard, TensorFlow or protobuf needed to
write; TensorBoard reads the files)."""

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
