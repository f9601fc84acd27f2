"""A tiny single-stage (RetinaNet-style) object detector on synthetic images of rectangles on noise,
written for these tests in the way torchvision's ``ops``/``models.detection`` references, DETR and
YOLO re-implementations commonly write torch code (modelled on their API usage, not a copy), all in
plain torch (no torchvision):

- box utilities: ``box_area``, ``box_iou`` with ``[:, None, :2]`` broadcasting, ``torch.max`` /
  ``torch.min`` of two tensors, ``clamp(min=0)``, ``generalized_box_iou`` and the element-wise
  ``generalized_box_iou_loss``, ``box_cxcywh_to_xyxy`` / ``box_xyxy_to_cxcywh`` with ``unbind(-1)``
  and ``torch.stack``, ``clip_boxes_to_image``, ``remove_small_boxes``;
- anchors from ``torch.meshgrid(..., indexing="ij")``, ``torch.arange(...) * stride``,
  ``round()``, ``view(-1, 1, 4) + view(1, -1, 4)``;
- a box coder (``torch.log``, ``torch.exp`` of ``clamp(max=...)``), a greedy NMS loop
  (``argsort(descending=True)``, boolean masks) beside a matrix form (``triu``), batched NMS by the
  coordinate offset trick beside a per-class ``torch.unique`` loop;
- sigmoid focal loss (``F.binary_cross_entropy_with_logits(..., reduction="none")``), smooth L1
  (``F.smooth_l1_loss(beta=...)``) and GIoU losses;
- anchor matching by IoU thresholds (``max(dim=0)``, ``torch.where``, low-quality matches with
  ``torch.nonzero``), and a Hungarian-free top-k matcher (``topk`` over anchors, ``scatter_``);
- a small conv backbone (``nn.Sequential``, ``nn.BatchNorm2d``, ``nn.MaxPool2d``), a head with a
  prior-probability bias (``nn.init.normal_``, ``nn.init.constant_``), ``permute`` / ``reshape``
  of the head outputs, ``torch.optim.SGD`` with momentum and ``clip_grad_norm_``;
- decoding under ``torch.no_grad()`` (``sigmoid``, ``flatten``, ``topk``, ``torch.div(...,
  rounding_mode="floor")``, ``torch.cat``), and a mean-IoU / recall metric;
- fixed-weight results (IoUs, NMS keeps, matches, losses, gradients, detections) for the torch
  comparison.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import Tensor, nn

torch.manual_seed(0)

IMAGE_SIZE = 32
NUM_CLASSES = 2
STRIDE = 4
ANCHOR_SIZES = (8.0, 14.0)
ANCHOR_RATIOS = (0.5, 1.0, 2.0)

# ------------------------------------------------------------------ box ops (torchvision.ops)


def box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1: Tensor, boxes2: Tensor):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter, union


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    # degenerate boxes give inf / nan results, so do an early check (DETR)
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
    assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    rbi = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = (rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai


def generalized_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xkis1 = torch.max(x1, x1g)
    ykis1 = torch.max(y1, y1g)
    xkis2 = torch.min(x2, x2g)
    ykis2 = torch.min(y2, y2g)
    intsctk = torch.zeros_like(x1)
    mask = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk[mask] = (xkis2[mask] - xkis1[mask]) * (ykis2[mask] - ykis1[mask])
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    iouk = intsctk / (unionk + eps)
    xc1 = torch.min(x1, x1g)
    yc1 = torch.min(y1, y1g)
    xc2 = torch.max(x2, x2g)
    yc2 = torch.max(y2, y2g)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    loss = 1 - (iouk - ((area_c - unionk) / (area_c + eps)))
    if reduction == "mean":
        loss = loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


def box_xyxy_to_cxcywh(x):
    x0, y0, x1, y1 = x.unbind(-1)
    b = [(x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0), (y1 - y0)]
    return torch.stack(b, dim=-1)


def clip_boxes_to_image(boxes, size):
    height, width = size
    boxes_x = boxes[..., 0::2].clamp(min=0, max=width)
    boxes_y = boxes[..., 1::2].clamp(min=0, max=height)
    return torch.stack((boxes_x, boxes_y), dim=-1).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size):
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return torch.where(keep)[0]


# ------------------------------------------------------------------ NMS


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy NMS, the python loop of YOLO re-implementations."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]]).squeeze(0)
        order = order[1:][ious <= iou_threshold]
    if not keep:
        return torch.empty((0,), dtype=torch.int64)
    return torch.stack(keep)


def nms_matrix(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """The same NMS with the IoU matrix of the sorted boxes and a boolean keep mask."""
    order = scores.argsort(descending=True)
    ious = box_iou(boxes[order], boxes[order]).triu(diagonal=1)
    keep = torch.ones(order.numel(), dtype=torch.bool)
    for i in range(order.numel()):
        if keep[i]:
            keep = keep & ~(ious[i] > iou_threshold)
    return order[keep]


def batched_nms(boxes, scores, idxs, iou_threshold):
    """torchvision's ``_batched_nms_coordinate_trick``."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


def batched_nms_vanilla(boxes, scores, idxs, iou_threshold):
    keep_mask = torch.zeros_like(scores, dtype=torch.bool)
    for class_id in torch.unique(idxs):
        curr_indices = torch.where(idxs == class_id)[0]
        curr_keep = nms(boxes[curr_indices], scores[curr_indices], iou_threshold)
        keep_mask[curr_indices[curr_keep]] = True
    keep_indices = torch.where(keep_mask)[0]
    return keep_indices[scores[keep_indices].sort(descending=True)[1]]


# ------------------------------------------------------------------ anchors, box coder, losses


def generate_anchors(feature_size, stride, sizes=ANCHOR_SIZES, ratios=ANCHOR_RATIOS):
    scales = torch.as_tensor(sizes)
    aspect_ratios = torch.as_tensor(ratios)
    h_ratios = torch.sqrt(aspect_ratios)
    w_ratios = 1 / h_ratios
    ws = (w_ratios[:, None] * scales[None, :]).view(-1)
    hs = (h_ratios[:, None] * scales[None, :]).view(-1)
    base_anchors = (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()
    shifts_x = torch.arange(0, feature_size, dtype=torch.float32) * stride + stride / 2
    shifts_y = torch.arange(0, feature_size, dtype=torch.float32) * stride + stride / 2
    shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
    shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
    shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
    return (shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4)


BBOX_XFORM_CLIP = math.log(1000.0 / 16)


class BoxCoder:
    def __init__(self, weights=(1.0, 1.0, 1.0, 1.0)):
        self.weights = weights

    def encode(self, reference_boxes, proposals):
        wx, wy, ww, wh = self.weights
        ex = box_xyxy_to_cxcywh(proposals)
        gt = box_xyxy_to_cxcywh(reference_boxes)
        dx = wx * (gt[:, 0] - ex[:, 0]) / ex[:, 2]
        dy = wy * (gt[:, 1] - ex[:, 1]) / ex[:, 3]
        dw = ww * torch.log(gt[:, 2] / ex[:, 2])
        dh = wh * torch.log(gt[:, 3] / ex[:, 3])
        return torch.stack((dx, dy, dw, dh), dim=1)

    def decode(self, rel_codes, boxes):
        wx, wy, ww, wh = self.weights
        ctr = box_xyxy_to_cxcywh(boxes)
        dx, dy = rel_codes[..., 0] / wx, rel_codes[..., 1] / wy
        dw = (rel_codes[..., 2] / ww).clamp(max=BBOX_XFORM_CLIP)
        dh = (rel_codes[..., 3] / wh).clamp(max=BBOX_XFORM_CLIP)
        pred_ctr_x = dx * ctr[..., 2] + ctr[..., 0]
        pred_ctr_y = dy * ctr[..., 3] + ctr[..., 1]
        pred_w = torch.exp(dw) * ctr[..., 2]
        pred_h = torch.exp(dh) * ctr[..., 3]
        return box_cxcywh_to_xyxy(torch.stack([pred_ctr_x, pred_ctr_y, pred_w, pred_h], dim=-1))


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


BELOW_LOW_THRESHOLD, BETWEEN_THRESHOLDS = -1, -2


def match_anchors(iou, high=0.5, low=0.4, allow_low_quality_matches=True):
    """torchvision's ``Matcher``: ``iou`` is [num_gt, num_anchors]; returns a gt index per anchor,
    -1 for background and -2 for ignored anchors."""
    matched_vals, matches = iou.max(dim=0)
    all_matches = matches.clone()
    below_low_threshold = matched_vals < low
    between_thresholds = (matched_vals >= low) & (matched_vals < high)
    matches[below_low_threshold] = BELOW_LOW_THRESHOLD
    matches[between_thresholds] = BETWEEN_THRESHOLDS
    if allow_low_quality_matches:
        highest_quality_foreach_gt, _ = iou.max(dim=1)
        gt_pred_pairs = torch.nonzero(iou == highest_quality_foreach_gt[:, None])
        pred_inds_to_update = gt_pred_pairs[:, 1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]
    return matches


def topk_match(iou, k=3):
    """Hungarian-free top-k matching: each gt takes its k best anchors (IoU > 0); an anchor claimed
    by two gts goes to the one it overlaps more."""
    num_gt, num_anchors = iou.shape
    topk_vals, topk_idx = iou.topk(k, dim=1)
    candidate = torch.zeros_like(iou).scatter_(1, topk_idx, 1.0) * (iou > 0)
    masked = torch.where(candidate > 0, iou, torch.full_like(iou, -1.0))
    best_val, best_gt = masked.max(dim=0)
    return torch.where(best_val > 0, best_gt, torch.full_like(best_gt, -1)), topk_vals


# ------------------------------------------------------------------ synthetic data


def make_batch(n, generator, max_objects=2):
    images = torch.randn(n, 1, IMAGE_SIZE, IMAGE_SIZE, generator=generator) * 0.15
    targets = []
    for i in range(n):
        num = int(torch.randint(1, max_objects + 1, (1,), generator=generator))
        boxes, labels = [], []
        for _ in range(num):
            for _attempt in range(20):
                wh = torch.randint(6, 15, (2,), generator=generator)
                xy = torch.randint(0, IMAGE_SIZE, (2,), generator=generator) % (IMAGE_SIZE - wh)
                box = torch.cat([xy, xy + wh]).float()
                if not boxes or box_iou(box[None], torch.stack(boxes)).max() == 0:
                    break
            label = int(torch.randint(0, NUM_CLASSES, (1,), generator=generator))
            x0, y0, x1, y1 = (int(v) for v in box.tolist())
            # class 0: a bright filled rectangle; class 1: a bright frame around a dark inside
            images[i, 0, y0:y1, x0:x1] = 1.0
            if label == 1:
                images[i, 0, y0 + 2:y1 - 2, x0 + 2:x1 - 2] = -0.5
            boxes.append(box)
            labels.append(label)
        targets.append({"boxes": torch.stack(boxes), "labels": torch.tensor(labels)})
    return images, targets


# ------------------------------------------------------------------ the model


def conv_bn(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
                         nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class TinyDetector(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES, num_anchors=len(ANCHOR_SIZES) * len(ANCHOR_RATIOS),
                 prior_probability=0.01):
        super().__init__()
        self.num_classes, self.num_anchors = num_classes, num_anchors
        self.backbone = nn.Sequential(conv_bn(1, 16), nn.MaxPool2d(2), conv_bn(16, 24),
                                      nn.MaxPool2d(2), conv_bn(24, 32))
        self.cls_logits = nn.Conv2d(32, num_anchors * num_classes, 3, padding=1)
        self.bbox_reg = nn.Conv2d(32, num_anchors * 4, 3, padding=1)
        for layer in (self.cls_logits, self.bbox_reg):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.constant_(layer.bias, 0)
        bias_value = -math.log((1 - prior_probability) / prior_probability)
        nn.init.constant_(self.cls_logits.bias, bias_value)

    def forward(self, images):
        features = self.backbone(images)
        n, _, h, w = features.shape
        cls = self.cls_logits(features).view(n, -1, self.num_classes, h, w)
        cls = cls.permute(0, 3, 4, 1, 2).reshape(n, -1, self.num_classes)
        reg = self.bbox_reg(features).view(n, -1, 4, h, w)
        reg = reg.permute(0, 3, 4, 1, 2).reshape(n, -1, 4)
        return cls, reg


box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
anchors = generate_anchors(IMAGE_SIZE // STRIDE, STRIDE)


def compute_loss(cls_logits, bbox_regression, targets, anchors, giou_weight=1.0):
    cls_losses, reg_losses, giou_losses = [], [], []
    for logits, deltas, target in zip(cls_logits, bbox_regression, targets):
        matched_idxs = match_anchors(box_iou(target["boxes"], anchors))
        foreground = matched_idxs >= 0
        num_foreground = foreground.sum()
        gt_classes_target = torch.zeros_like(logits)
        gt_classes_target[foreground, target["labels"][matched_idxs[foreground]]] = 1.0
        valid = matched_idxs != BETWEEN_THRESHOLDS
        cls_losses.append(sigmoid_focal_loss(logits[valid], gt_classes_target[valid],
                                             reduction="sum") / max(1, num_foreground))
        matched_gt = target["boxes"][matched_idxs[foreground]]
        target_deltas = box_coder.encode(matched_gt, anchors[foreground])
        reg_losses.append(F.smooth_l1_loss(deltas[foreground], target_deltas, beta=1.0 / 9,
                                           reduction="sum") / max(1, num_foreground))
        pred_boxes = box_coder.decode(deltas[foreground], anchors[foreground])
        giou_losses.append(generalized_box_iou_loss(pred_boxes, matched_gt, reduction="mean"))
    cls_loss = sum(cls_losses) / len(targets)
    reg_loss = sum(reg_losses) / len(targets)
    giou_loss = sum(giou_losses) / len(targets)
    return {"classification": cls_loss, "bbox_regression": reg_loss,
            "giou": giou_weight * giou_loss}


@torch.no_grad()
def postprocess(cls_logits, bbox_regression, anchors, score_thresh=0.3, topk_candidates=50,
                nms_thresh=0.4, detections_per_img=5):
    detections = []
    for logits, deltas in zip(cls_logits, bbox_regression):
        scores = torch.sigmoid(logits).flatten()
        keep_idxs = scores > score_thresh
        scores = scores[keep_idxs]
        topk_idxs = torch.where(keep_idxs)[0]
        num_topk = min(topk_candidates, topk_idxs.size(0))
        scores, idxs = scores.topk(num_topk)
        topk_idxs = topk_idxs[idxs]
        anchor_idxs = torch.div(topk_idxs, NUM_CLASSES, rounding_mode="floor")
        labels = topk_idxs % NUM_CLASSES
        boxes = box_coder.decode(deltas[anchor_idxs], anchors[anchor_idxs])
        boxes = clip_boxes_to_image(boxes, (IMAGE_SIZE, IMAGE_SIZE))
        small = remove_small_boxes(boxes, 1.0)
        boxes, scores, labels = boxes[small], scores[small], labels[small]
        keep = batched_nms(boxes, scores, labels, nms_thresh)[:detections_per_img]
        detections.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
    return detections


def evaluate(detections, targets):
    """For every target box, the best IoU of a detection of its class (0 when none)."""
    best = []
    for det, target in zip(detections, targets):
        for box, label in zip(target["boxes"], target["labels"]):
            same = det["labels"] == label
            if same.any():
                best.append(box_iou(box[None], det["boxes"][same]).max())
            else:
                best.append(torch.tensor(0.0))
    best = torch.stack(best)
    return best.mean().item(), (best >= 0.5).float().mean().item()


# ------------------------------------------------------------------ fixed-weight results

fixed_boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0],
                            [20.0, 20.0, 30.0, 28.0], [2.0, 0.0, 9.0, 12.0],
                            [21.0, 19.0, 29.0, 29.0], [40.0, 0.0, 44.0, 6.0]])
fixed_scores = torch.tensor([0.9, 0.95, 0.6, 0.3, 0.8, 0.5])
fixed_idxs = torch.tensor([0, 0, 1, 0, 0, 1])
cxcywh = box_xyxy_to_cxcywh(fixed_boxes)
fixed_results = {
    "area": box_area(fixed_boxes),
    "iou": box_iou(fixed_boxes, fixed_boxes),
    "giou": generalized_box_iou(fixed_boxes, fixed_boxes.flip(0)),
    "giou_loss": generalized_box_iou_loss(fixed_boxes, fixed_boxes.flip(0)),
    "cxcywh": cxcywh,
    "roundtrip": box_cxcywh_to_xyxy(cxcywh),
    "nms": nms(fixed_boxes, fixed_scores, 0.5),
    "nms_matrix": nms_matrix(fixed_boxes, fixed_scores, 0.5),
    "batched_nms": batched_nms(fixed_boxes, fixed_scores, fixed_idxs, 0.5),
    "batched_nms_vanilla": batched_nms_vanilla(fixed_boxes, fixed_scores, fixed_idxs, 0.5),
    "clipped": clip_boxes_to_image(fixed_boxes + 5, (32, 32)),
    "anchors": anchors,
}
empty = torch.empty((0, 4))
fixed_results["empty_iou"] = box_iou(empty, fixed_boxes)
fixed_results["empty_nms"] = nms(empty, torch.empty(0), 0.5)
fixed_results["empty_batched_nms"] = batched_nms(empty, torch.empty(0), torch.empty(0), 0.5)
fixed_results["labels_unique"], fixed_results["labels_counts"] = torch.unique(
    fixed_idxs, sorted=True, return_counts=True)
anchor_iou = box_iou(fixed_boxes[:5], anchors)
fixed_results["matches"] = match_anchors(anchor_iou)
fixed_results["matches_strict"] = match_anchors(anchor_iou, allow_low_quality_matches=False)
fixed_results["topk_matches"], fixed_results["topk_vals"] = topk_match(anchor_iou, k=3)
encoded = box_coder.encode(fixed_boxes[[0, 2, 4]], anchors[[0, 100, 200]])
fixed_results["encoded"] = encoded
fixed_results["decoded"] = box_coder.decode(encoded, anchors[[0, 100, 200]])

focal_logits = torch.linspace(-4, 4, 12).reshape(6, 2).requires_grad_()
focal_targets = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0]])
focal = sigmoid_focal_loss(focal_logits, focal_targets, reduction="none")
focal.sum().backward()
fixed_results["focal"] = focal.detach()
fixed_results["focal_grad"] = focal_logits.grad.clone()
pred = (fixed_boxes[:5] + torch.linspace(-1, 1, 20).reshape(5, 4)).requires_grad_()
giou_l = generalized_box_iou_loss(pred, fixed_boxes[:5], reduction="sum")
giou_l.backward()
fixed_results["giou_loss_sum"] = giou_l.item()
fixed_results["giou_grad"] = pred.grad.clone()

torch.manual_seed(1)
fixed_model = TinyDetector()
fixed_gen = torch.Generator().manual_seed(123)
fixed_images, fixed_targets = make_batch(4, fixed_gen)
fixed_results["images"] = fixed_images
fixed_results["target_boxes"] = [t["boxes"] for t in fixed_targets]
cls_out, reg_out = fixed_model(fixed_images)
fixed_loss_dict = compute_loss(cls_out, reg_out, fixed_targets, anchors)
fixed_total = sum(fixed_loss_dict.values())
fixed_total.backward()
fixed_results["losses"] = {k: v.item() for k, v in fixed_loss_dict.items()}
fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed_model.named_parameters()}
fixed_results["running_mean"] = fixed_model.backbone[0][1].running_mean.clone()
fixed_model.eval()
with torch.no_grad():
    eval_cls, eval_reg = fixed_model(fixed_images)
fixed_results["eval_cls"] = eval_cls
fixed_results["eval_reg"] = eval_reg

# ------------------------------------------------------------------ training

torch.manual_seed(0)
model = TinyDetector()
params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=0.02, momentum=0.9, weight_decay=1e-4)
train_images, train_targets = make_batch(160, torch.Generator().manual_seed(0))
val_images, val_targets = make_batch(16, torch.Generator().manual_seed(999))

model.eval()
with torch.no_grad():
    initial_detections = postprocess(*model(val_images), anchors)
initial_mean_iou, initial_recall = evaluate(initial_detections, val_targets)

num_epochs, batch_size = 10, 8
losses, cls_losses, reg_losses, giou_losses = [], [], [], []
model.train()
for _epoch in range(num_epochs):
    for batch in torch.randperm(len(train_targets)).split(batch_size):
        images = train_images[batch]
        targets = [train_targets[i] for i in batch.tolist()]
        cls_out, reg_out = model(images)
        loss_dict = compute_loss(cls_out, reg_out, targets, anchors)
        loss = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, max_norm=10.0)
        optimizer.step()
        losses.append(loss.item())
        cls_losses.append(loss_dict["classification"].item())
        reg_losses.append(loss_dict["bbox_regression"].item())
        giou_losses.append(loss_dict["giou"].item())

model.eval()
with torch.no_grad():
    cls_out, reg_out = model(val_images)
    detections = postprocess(cls_out, reg_out, anchors)
mean_iou, recall = evaluate(detections, val_targets)

if __name__ == "__main__":
    print(f"loss {losses[0]:.4f} -> {sum(losses[-20:]) / 20:.4f}")
    print(f"mean IoU {initial_mean_iou:.3f} -> {mean_iou:.3f}, recall@0.5 {recall:.3f}")
    print(detections[0], val_targets[0])
