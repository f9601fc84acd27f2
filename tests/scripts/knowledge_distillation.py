"""Distilling a teacher CNN into a smaller student, written for these tests in the way the PyTorch
beginner tutorials commonly write torch code (modelled on the API usage of the tutorial
"Knowledge Distillation Tutorial", not a copy of it):

- teacher and student built from nn.Sequential conv stacks (Conv2d(kernel_size=3, padding=1),
  ReLU, MaxPool2d(kernel_size=2, stride=2)) and Linear/Dropout heads, torch.flatten;
- plain cross-entropy training with optim.Adam, accuracy via torch.max(outputs.data, 1), equal
  initialisations under torch.manual_seed checked with torch.norm, parameter counts;
- a student trained on temperature-softened teacher outputs (softmax / log_softmax, T**2);
- the teacher's weights loaded (load_state_dict) into variants that also return hidden features:
  avg_pool1d'd flattened features for nn.CosineEmbeddingLoss(target=ones), and a feature map
  matched by the student's extra Conv2d regressor with nn.MSELoss;
- the three distillation losses and the student's gradients from cos-valued weights, for the
  torch comparison.

Images made of low-resolution class patterns plus noise (drawn with torch.Generator's) stand
in for CIFAR-10.
"""
import warnings

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim
from jitgrad.utils.data import TensorDataset

warnings.filterwarnings("ignore")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pattern_images(n, seed):
    """Each class: a fixed 3x4x4 colour pattern blown up to 32x32, plus per-image noise."""
    gen = torch.Generator().manual_seed(seed)
    coarse = torch.rand(10, 3, 4, 4, generator=torch.Generator().manual_seed(99))
    patterns = coarse.repeat_interleave(8, dim=2).repeat_interleave(8, dim=3)
    y = torch.randint(0, 10, (n,), generator=gen)
    x = 0.6 * patterns[y] + 0.4 * torch.rand(n, 3, 32, 32, generator=gen)
    mean = torch.tensor([0.5, 0.5, 0.5]).view(3, 1, 1)
    return TensorDataset((x - mean) / 0.25, y)


train_loader = torch.utils.data.DataLoader(pattern_images(128, 5), batch_size=32, shuffle=True,
                                           num_workers=2)
test_loader = torch.utils.data.DataLoader(pattern_images(64, 6), batch_size=128, shuffle=False,
                                          num_workers=2)


def conv(c_in, c_out):
    return [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1), nn.ReLU()]


def pool():
    return nn.MaxPool2d(kernel_size=2, stride=2)


class Teacher(nn.Module):
    """4 convs to a 32x8x8 map. ``hint`` picks what comes back next to the logits."""

    def __init__(self, hint=None, classes=10):
        super().__init__()
        self.hint = hint
        self.features = nn.Sequential(*conv(3, 12), *conv(12, 12), pool(),
                                      *conv(12, 12), *conv(12, 32), pool())
        self.head = nn.Sequential(nn.Linear(2048, 256), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Linear(256, classes))

    def forward(self, x):
        fmap = self.features(x)
        flat = torch.flatten(fmap, 1)
        logits = self.head(flat)
        if self.hint == "pooled":
            return logits, nn.functional.avg_pool1d(flat, 2)  # 2048 -> 1024, the student's size
        if self.hint == "map":
            return logits, fmap
        return logits


class Student(nn.Module):
    """2 convs to a 16x8x8 map; optionally a Conv2d regressor up to the teacher's 32 channels."""

    def __init__(self, hint=None, classes=10):
        super().__init__()
        self.hint = hint
        self.features = nn.Sequential(*conv(3, 12), pool(), *conv(12, 16), pool())
        if hint == "map":
            self.regressor = nn.Sequential(nn.Conv2d(16, 32, kernel_size=3, padding=1))
        self.head = nn.Sequential(nn.Linear(1024, 128), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Linear(128, classes))

    def forward(self, x):
        fmap = self.features(x)
        flat = torch.flatten(fmap, 1)
        logits = self.head(flat)
        if self.hint == "flat":
            return logits, flat
        if self.hint == "map":
            return logits, self.regressor(fmap)
        return logits


epoch_losses = {}


def fit(student, phase, batch_loss, epochs=3, lr=0.001):
    """Adam on ``batch_loss(student, x, y)``, recording the mean loss of each epoch."""
    opt = optim.Adam(student.parameters(), lr=lr)
    student.to(device)
    student.train()
    for epoch in range(epochs):
        total = 0.0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = batch_loss(student, x, y)
            loss.backward()
            opt.step()
            total += loss.item()
        epoch_losses.setdefault(phase, []).append(total / len(train_loader))
        print(f"{phase} epoch {epoch + 1}: {epoch_losses[phase][-1]:.4f}")


def accuracy(model):
    model.to(device)
    model.eval()
    right = seen = 0
    with torch.no_grad():
        for x, y in test_loader:
            out = model(x.to(device))
            logits = out[0] if isinstance(out, tuple) else out
            _, guess = torch.max(logits.data, 1)
            right += (guess == y.to(device)).sum().item()
            seen += y.size(0)
    return 100 * right / seen


ce = nn.CrossEntropyLoss()


def plain_ce(model, x, y):
    return ce(model(x), y)


torch.manual_seed(42)
teacher = Teacher()
fit(teacher, "teacher CE", plain_ce)
teacher.eval()

torch.manual_seed(42)
student = Student()
torch.manual_seed(42)
kd_student = Student()
same_init = torch.norm(student.features[0].weight).item() == \
    torch.norm(kd_student.features[0].weight).item()
total_params_deep = f"{sum(p.numel() for p in teacher.parameters()):,}"
total_params_light = f"{sum(p.numel() for p in student.parameters()):,}"
print("parameters: teacher", total_params_deep, "student", total_params_light)
fit(student, "student CE", plain_ce)

T = 2


def soft_target_loss(teacher_logits, student_logits):
    """Cross-entropy between the softened distributions, scaled by T**2."""
    p_teacher = nn.functional.softmax(teacher_logits / T, dim=-1)
    log_p_student = nn.functional.log_softmax(student_logits / T, dim=-1)
    return -torch.sum(p_teacher * log_p_student) / log_p_student.size()[0] * T ** 2


def kd_loss(model, x, y):
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = model(x)
    return 0.25 * soft_target_loss(t_logits, s_logits) + 0.75 * ce(s_logits, y)


fit(kd_student, "KD", kd_loss)

# the trained teacher's weights in the variants that expose hidden features
pooled_teacher = Teacher(hint="pooled")
pooled_teacher.load_state_dict(teacher.state_dict())
pooled_teacher.eval()
loaded_teacher_same = torch.equal(pooled_teacher.features[0].weight, teacher.features[0].weight)
map_teacher = Teacher(hint="map")
map_teacher.load_state_dict(teacher.state_dict())
map_teacher.eval()

cosine = nn.CosineEmbeddingLoss()
mse = nn.MSELoss()


def cosine_loss(model, x, y):
    with torch.no_grad():
        _, t_hidden = pooled_teacher(x)
    s_logits, s_hidden = model(x)
    agree = cosine(s_hidden, t_hidden, target=torch.ones(x.size(0)).to(device))
    return 0.25 * agree + 0.75 * ce(s_logits, y)


def regressor_loss(model, x, y):
    with torch.no_grad():
        _, t_map = map_teacher(x)
    s_logits, s_map = model(x)
    return 0.25 * mse(s_map, t_map) + 0.75 * ce(s_logits, y)


torch.manual_seed(42)
cos_student = Student(hint="flat")
fit(cos_student, "cosine", cosine_loss)
torch.manual_seed(42)
mse_student = Student(hint="map")
fit(mse_student, "MSE", regressor_loss)

accuracies = {"teacher": accuracy(teacher), "student": accuracy(student),
              "kd": accuracy(kd_student), "cosine": accuracy(cos_student),
              "mse": accuracy(mse_student)}
print(accuracies)

# fixed weights, eval mode: the three hint losses and the student's gradients
warnings.resetwarnings()
ref_teacher, ref_student = Teacher().eval(), Student(hint="map").eval()
with torch.no_grad():
    for model in (ref_teacher, ref_student):
        for k, p in enumerate(model.parameters(), start=1):
            scale = p[0].numel() ** 0.5
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * k).view_as(p) / scale)
ref_x = torch.sin(torch.arange(4 * 3 * 32 * 32, dtype=torch.float32)).view(4, 3, 32, 32)
ref_y = torch.tensor([2, 5, 8, 1])
t_map = ref_teacher.features(ref_x)
t_logits = ref_teacher.head(torch.flatten(t_map, 1))
t_pooled = nn.functional.avg_pool1d(torch.flatten(t_map, 1), 2)
s_logits, s_map = ref_student(ref_x)
s_flat = torch.flatten(ref_student.features(ref_x), 1)
kd = soft_target_loss(t_logits, s_logits)
cos = nn.CosineEmbeddingLoss()(s_flat, t_pooled, torch.ones(4))
reg = nn.MSELoss()(s_map, t_map)
(kd + cos + reg + ce(s_logits, ref_y)).backward()
fixed_result = {"kd": kd.item(), "cos": cos.item(), "mse": reg.item(),
                **{name: p.grad.tolist() for name, p in ref_student.named_parameters()}}
