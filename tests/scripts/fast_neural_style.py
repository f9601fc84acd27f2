# ruff: noqa: B007, C408, E402, E501, F401, F841, N801, N802, N803, N806, N812, S108, SIM115, UP008, UP031, UP032 (the example's code as is)
"""pytorch/examples fast_neural_style: neural_style/transformer_net.py (TransformerNet of
ConvLayer = nn.ReflectionPad2d + Conv2d, nn.InstanceNorm2d(affine=True), five ResidualBlocks,
UpsampleConvLayer through F.interpolate(mode='nearest', scale_factor=2)), utils.py
(load_image, save_image, gram_matrix with view/transpose/bmm, normalize_batch with
new_tensor and an in-place div_), vgg.py (Vgg16 cut into four slices of
models.vgg16().features with add_module, frozen by requires_grad = False, returning a
namedtuple) and neural_style.py (train: the content loss on relu2_2 and the style loss on the
Gram matrices with MSELoss and Adam, checkpoints through eval().cpu() and to(device).train();
stylize: torch.load, the InstanceNorm running_* keys dropped by a regex, load_state_dict,
eval under no_grad; main's argparse subcommands).

Changes: the files are one script; torchvision is not installed here, so small stand-ins give
transforms (Compose, Resize, CenterCrop, ToTensor, Lambda), datasets.ImageFolder and
models.vgg16, whose features have VGG16's 23 first layers (conv, ReLU(inplace=True), max pool,
at the same indices) 8, 16, 32 and 64 channels wide (not 64 ... 512), with weights drawn by
NumPy (the ImageNet weights are a download); the COCO images and the style image are 16
synthetic 40x40 PNGs (shapes on noise) and a 32x32 striped PNG in a temporary directory, which
also takes the models and the stylized image; TransformerNet's widths are 8, 16, 32 (not 32,
64, 128); main parses a list: 4 epochs at lr 1e-2 on 32x32 crops, logging and checkpoints every 2
batches (not 2 epochs at 1e-3 on 256x256, every 500 and 2000), then the eval subcommand on one
of the images (main reads the list from a global argv, set before each call).
Sections marked "(added)" are not the example's: they record results to compare with torch.
"""
import argparse
import os
import sys
import tempfile
import time
import re
from collections import namedtuple

import numpy as np
import jitgrad as torch
from jitgrad.optim import Adam
from jitgrad.utils.data import DataLoader
# (torchvision's datasets, transforms and models: the stand-ins below)
# (the torch.onnx import: for --export_onnx, not taken here)
from PIL import Image

_rng = np.random.default_rng(0)  # (added)


class transforms:  # (stand-ins for torchvision.transforms)
    class Compose:
        def __init__(self, steps):
            self.steps = steps

        def __call__(self, x):
            for step in self.steps:
                x = step(x)
            return x

    class Resize:  # (an int: the shorter side to that size)
        def __init__(self, size):
            self.size = size

        def __call__(self, img):
            w, h = img.size
            if w <= h:
                return img.resize((self.size, int(self.size * h / w)), Image.BILINEAR)
            return img.resize((int(self.size * w / h), self.size), Image.BILINEAR)

    class CenterCrop:
        def __init__(self, size):
            self.size = size

        def __call__(self, img):
            w, h = img.size
            left, top = int(round((w - self.size) / 2.0)), int(round((h - self.size) / 2.0))
            return img.crop((left, top, left + self.size, top + self.size))

    class ToTensor:
        def __call__(self, img):
            return torch.from_numpy(np.asarray(img, dtype=np.uint8).transpose(2, 0, 1).copy()).float().div(255)

    class Lambda:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, x):
            return self.fn(x)


class datasets:  # (stand-in for torchvision.datasets)
    class ImageFolder(torch.utils.data.Dataset):
        def __init__(self, root, transform=None):
            classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
            self.samples = [(os.path.join(root, c, f), i) for i, c in enumerate(classes)
                            for f in sorted(os.listdir(os.path.join(root, c)))]
            self.transform = transform

        def __len__(self):
            return len(self.samples)

        def __getitem__(self, index):
            path, target = self.samples[index]
            img = Image.open(path).convert('RGB')
            return self.transform(img), target


class models:  # (stand-in for torchvision.models: VGG16's first 23 feature layers, narrower)
    class VGG16_Weights:
        IMAGENET1K_V1 = 'IMAGENET1K_V1'

    class _VGG(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers, c_in = [], 3
            for v in [8, 8, 'M', 16, 16, 'M', 32, 32, 32, 'M', 64, 64, 64]:
                if v == 'M':
                    layers.append(torch.nn.MaxPool2d(kernel_size=2, stride=2))
                else:
                    layers += [torch.nn.Conv2d(c_in, v, kernel_size=3, padding=1), torch.nn.ReLU(inplace=True)]
                    c_in = v
            self.features = torch.nn.Sequential(*layers)
            with torch.no_grad():  # ("pretrained": fixed weights drawn by NumPy)
                for p in self.features.parameters():
                    fan_in = p[0].numel() if p.dim() > 1 else 1
                    p.copy_(torch.tensor(_rng.normal(0.0, np.sqrt(2.0 / fan_in), tuple(p.shape)), dtype=torch.float32))

    @staticmethod
    def vgg16(weights=None):
        return models._VGG()


# ---------------------------------------------------------------- neural_style/transformer_net.py


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super(TransformerNet, self).__init__()
        # Initial convolution layers
        self.conv1 = ConvLayer(3, 8, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer(8, 16, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(16, affine=True)
        self.conv3 = ConvLayer(16, 32, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(32, affine=True)
        # Residual layers
        self.res1 = ResidualBlock(32)
        self.res2 = ResidualBlock(32)
        self.res3 = ResidualBlock(32)
        self.res4 = ResidualBlock(32)
        self.res5 = ResidualBlock(32)
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer(32, 16, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(16, affine=True)
        self.deconv2 = UpsampleConvLayer(16, 8, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(8, affine=True)
        self.deconv3 = ConvLayer(8, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.res3(y)
        y = self.res4(y)
        y = self.res5(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


# ---------------------------------------------------------------- neural_style/utils.py


class utils:  # (the module utils.py, as a namespace)
    @staticmethod
    def load_image(filename, size=None, scale=None):
        img = Image.open(filename).convert('RGB')
        if size is not None:
            img = img.resize((size, size), Image.ANTIALIAS)
        elif scale is not None:
            img = img.resize((int(img.size[0] / scale), int(img.size[1] / scale)), Image.ANTIALIAS)
        return img

    @staticmethod
    def save_image(filename, data):
        img = data.clone().clamp(0, 255).numpy()
        img = img.transpose(1, 2, 0).astype("uint8")
        img = Image.fromarray(img)
        img.save(filename)

    @staticmethod
    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        features_t = features.transpose(1, 2)
        gram = features.bmm(features_t) / (ch * h * w)
        return gram

    @staticmethod
    def normalize_batch(batch):
        # normalize using imagenet mean and std
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        batch = batch.div_(255.0)
        return (batch - mean) / std


# ---------------------------------------------------------------- neural_style/vgg.py


class Vgg16(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super(Vgg16, self).__init__()
        vgg_pretrained_features = models.vgg16(weights=models.VGG16_Weights.IMAGENET1K_V1).features
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 16):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(16, 23):
            self.slice4.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out


# ---------------------------------------------------------------- (added) fixed weights
# A TransformerNet and a Vgg16 with weights drawn by NumPy (jitgrad's random numbers are not
# torch's): the stylized output in float32; in float64 (where a ReLU input within float32
# rounding of 0 cannot flip a gradient) train()'s losses, the gradients and two Adam steps.
fixed = TransformerNet()
with torch.no_grad():
    for _name, _p in fixed.named_parameters():
        if _name.startswith('in') or '.in' in _name:  # (InstanceNorm2d's affine weight and bias)
            _p.copy_(torch.tensor(('weight' in _name) + _rng.normal(0.0, 0.1, tuple(_p.shape)), dtype=torch.float32))
        else:
            _fan_in = _p[0].numel() if _p.dim() > 1 else 1
            _p.copy_(torch.tensor(_rng.normal(0.0, 1.0 / np.sqrt(_fan_in), tuple(_p.shape)), dtype=torch.float32))
fixed_vgg = Vgg16(requires_grad=False)
fixed_x = torch.tensor(_rng.uniform(0, 255, (2, 3, 32, 32)), dtype=torch.float32)
fixed_style = torch.tensor(_rng.uniform(0, 255, (1, 3, 32, 32)), dtype=torch.float32).repeat(2, 1, 1, 1)
fixed_results = {'output32': fixed(fixed_x).detach()}
fixed, fixed_vgg = fixed.double(), fixed_vgg.double()
_optimizer = Adam(fixed.parameters(), 1e-3)
_mse_loss = torch.nn.MSELoss()
_gram_style = [utils.gram_matrix(y) for y in fixed_vgg(utils.normalize_batch(fixed_style.double()))]
fixed_results['gram_style'] = [g.clone() for g in _gram_style]
fixed_results['losses'] = []
for _step in range(2):
    _optimizer.zero_grad()
    _x = fixed_x.double()
    _y = fixed(_x)
    _y = utils.normalize_batch(_y)
    _x = utils.normalize_batch(_x)
    _features_y = fixed_vgg(_y)
    _features_x = fixed_vgg(_x)
    _content_loss = 1e5 * _mse_loss(_features_y.relu2_2, _features_x.relu2_2)
    _style_loss = 0.
    for _ft_y, _gm_s in zip(_features_y, _gram_style):
        _style_loss += _mse_loss(utils.gram_matrix(_ft_y), _gm_s[:2, :, :])
    _style_loss *= 1e10
    (_content_loss + _style_loss).backward()
    if _step == 0:
        fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
        fixed_results['vgg_grads'] = [p.grad for p in fixed_vgg.parameters()]
        fixed_results['features'] = [f.detach().clone() for f in _features_y]
    _optimizer.step()
    fixed_results['losses'].append([_content_loss.item(), _style_loss.item()])
fixed_results['params'] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_results['feature_names'] = list(_features_y._fields)
fixed_results['buffers'] = [n for n, _ in fixed.named_buffers()]

# ---------------------------------------------------------------- (added) synthetic images
data_root = tempfile.mkdtemp()
os.makedirs(os.path.join(data_root, 'train', 'images'))
_yy, _xx = np.mgrid[0:40, 0:40]
for _i in range(16):
    _img = _rng.uniform(0, 100, (40, 40, 3))
    _cy, _cx, _r = _rng.integers(10, 30), _rng.integers(10, 30), _rng.integers(4, 10)
    _img[(_yy - _cy) ** 2 + (_xx - _cx) ** 2 <= _r ** 2] += _rng.uniform(50, 150, 3)
    Image.fromarray(_img.clip(0, 255).astype(np.uint8)).save(os.path.join(data_root, 'train', 'images', f'{_i:03d}.png'))
_stripes = np.zeros((32, 32, 3), np.uint8)
_stripes[:, :, 0] = 255 * ((_xx[:32, :32] + _yy[:32, :32]) // 4 % 2)
_stripes[:, :, 2] = 255 - _stripes[:, :, 0]
Image.fromarray(_stripes).save(os.path.join(data_root, 'style.png'))

losses = []  # (added)

# ---------------------------------------------------------------- neural_style/neural_style.py


def check_paths(args):
    try:
        if not os.path.exists(args.save_model_dir):
            os.makedirs(args.save_model_dir)
        if args.checkpoint_model_dir is not None and not (os.path.exists(args.checkpoint_model_dir)):
            os.makedirs(args.checkpoint_model_dir)
    except OSError as e:
        print(e)
        sys.exit(1)


def train(args):
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    transform = transforms.Compose([
        transforms.Resize(args.image_size),
        transforms.CenterCrop(args.image_size),
        transforms.ToTensor(),
        transforms.Lambda(lambda x: x.mul(255))
    ])
    train_dataset = datasets.ImageFolder(args.dataset, transform)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet().to(device)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = Vgg16(requires_grad=False).to(device)
    style_transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Lambda(lambda x: x.mul(255))
    ])
    style = utils.load_image(args.style_image, size=args.style_size)
    style = style_transform(style)
    style = style.repeat(args.batch_size, 1, 1, 1).to(device)

    features_style = vgg(utils.normalize_batch(style))
    gram_style = [utils.gram_matrix(y) for y in features_style]

    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            x = x.to(device)
            y = transformer(x)

            y = utils.normalize_batch(y)
            x = utils.normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = utils.gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()
            losses.append((content_loss.item(), style_loss.item()))  # (added)

            if (batch_id + 1) % args.log_interval == 0:
                mesg = "{}\tEpoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    time.ctime(), e + 1, count, len(train_dataset),
                                  agg_content_loss / (batch_id + 1),
                                  agg_style_loss / (batch_id + 1),
                                  (agg_content_loss + agg_style_loss) / (batch_id + 1)
                )
                print(mesg)

            if args.checkpoint_model_dir is not None and (batch_id + 1) % args.checkpoint_interval == 0:
                transformer.eval().cpu()
                ckpt_model_filename = "ckpt_epoch_" + str(e) + "_batch_id_" + str(batch_id + 1) + ".pth"
                ckpt_model_path = os.path.join(args.checkpoint_model_dir, ckpt_model_filename)
                torch.save(transformer.state_dict(), ckpt_model_path)
                transformer.to(device).train()

    # save model
    transformer.eval().cpu()
    timestamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    save_model_filename = f"epoch_{args.epochs}_{timestamp}_{args.content_weight}_{args.style_weight}.model"
    save_model_path = os.path.join(args.save_model_dir, save_model_filename)
    torch.save(transformer.state_dict(), save_model_path)

    print("\nDone, trained model saved at", save_model_path)
    trained.update(model=transformer, path=save_model_path)  # (added)


def stylize(args):
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    content_image = utils.load_image(args.content_image, scale=args.content_scale)
    content_transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Lambda(lambda x: x.mul(255))
    ])
    content_image = content_transform(content_image)
    content_image = content_image.unsqueeze(0).to(device)

    if args.model.endswith(".onnx"):
        output = stylize_onnx(content_image, args)
    else:
        with torch.no_grad():
            style_model = TransformerNet()
            state_dict = torch.load(args.model)
            # remove saved deprecated running_* keys in InstanceNorm from the checkpoint
            for k in list(state_dict.keys()):
                if re.search(r'in\d+\.running_(mean|var)$', k):
                    del state_dict[k]
            style_model.load_state_dict(state_dict)
            style_model.to(device)
            style_model.eval()
            if args.export_onnx:
                assert args.export_onnx.endswith(".onnx"), "Export model file should end with .onnx"
                output = torch.onnx._export(
                    style_model, content_image, args.export_onnx, opset_version=11,
                ).cpu()
            else:
                output = style_model(content_image).cpu()
    utils.save_image(args.output_image, output[0])
    stylized.update(input=content_image, output=output)  # (added)


def stylize_onnx(content_image, args):
    """
    Read ONNX model and run it using onnxruntime
    """

    assert not args.export_onnx

    import onnxruntime

    ort_session = onnxruntime.InferenceSession(args.model)

    def to_numpy(tensor):
        return (
            tensor.detach().cpu().numpy()
            if tensor.requires_grad
            else tensor.cpu().numpy()
        )

    ort_inputs = {ort_session.get_inputs()[0].name: to_numpy(content_image)}
    ort_outs = ort_session.run(None, ort_inputs)
    img_out_y = ort_outs[0]

    return torch.from_numpy(img_out_y)


def main():
    main_arg_parser = argparse.ArgumentParser(description="parser for fast-neural-style")
    subparsers = main_arg_parser.add_subparsers(title="subcommands", dest="subcommand")

    train_arg_parser = subparsers.add_parser("train", help="parser for training arguments")
    train_arg_parser.add_argument("--epochs", type=int, default=2,
                                  help="number of training epochs, default is 2")
    train_arg_parser.add_argument("--batch-size", type=int, default=4,
                                  help="batch size for training, default is 4")
    train_arg_parser.add_argument("--dataset", type=str, required=True,
                                  help="path to training dataset, the path should point to a folder "
                                       "containing another folder with all the training images")
    train_arg_parser.add_argument("--style-image", type=str, default="images/style-images/mosaic.jpg",
                                  help="path to style-image")
    train_arg_parser.add_argument("--save-model-dir", type=str, required=True,
                                  help="path to folder where trained model will be saved.")
    train_arg_parser.add_argument("--checkpoint-model-dir", type=str, default=None,
                                  help="path to folder where checkpoints of trained models will be saved")
    train_arg_parser.add_argument("--image-size", type=int, default=256,
                                  help="size of training images, default is 256 X 256")
    train_arg_parser.add_argument("--style-size", type=int, default=None,
                                  help="size of style-image, default is the original size of style image")
    train_arg_parser.add_argument('--accel', action='store_true',
                                  help='use accelerator')
    train_arg_parser.add_argument("--seed", type=int, default=42,
                                  help="random seed for training")
    train_arg_parser.add_argument("--content-weight", type=float, default=1e5,
                                  help="weight for content-loss, default is 1e5")
    train_arg_parser.add_argument("--style-weight", type=float, default=1e10,
                                  help="weight for style-loss, default is 1e10")
    train_arg_parser.add_argument("--lr", type=float, default=1e-3,
                                  help="learning rate, default is 1e-3")
    train_arg_parser.add_argument("--log-interval", type=int, default=500,
                                  help="number of images after which the training loss is logged, default is 500")
    train_arg_parser.add_argument("--checkpoint-interval", type=int, default=2000,
                                  help="number of batches after which a checkpoint of the trained model will be created")

    eval_arg_parser = subparsers.add_parser("eval", help="parser for evaluation/stylizing arguments")
    eval_arg_parser.add_argument("--content-image", type=str, required=True,
                                 help="path to content image you want to stylize")
    eval_arg_parser.add_argument("--content-scale", type=float, default=None,
                                 help="factor for scaling down the content image")
    eval_arg_parser.add_argument("--output-image", type=str, required=True,
                                 help="path for saving the output image")
    eval_arg_parser.add_argument("--model", type=str, required=True,
                                 help="saved model to be used for stylizing the image. If file ends in .pth - PyTorch path is used, if in .onnx - Caffe2 path")
    eval_arg_parser.add_argument("--export_onnx", type=str,
                                 help="export ONNX model to a given file")
    eval_arg_parser.add_argument('--accel', action='store_true',
                                 help='use accelerator')

    args = main_arg_parser.parse_args(argv)  # (parse_args())

    if args.subcommand is None:
        print("ERROR: specify either train or eval")
        sys.exit(1)
    if args.accel and not torch.accelerator.is_available():
        print("ERROR: accelerator is not available, try running on CPU")
        sys.exit(1)
    if not args.accel and torch.accelerator.is_available():
        print("WARNING: accelerator is available, run with --accel to enable it")

    if args.subcommand == "train":
        check_paths(args)
        train(args)
    else:
        stylize(args)


if __name__ == "__main__":
    trained, stylized = {}, {}  # (added)
    argv = ['train', '--dataset', os.path.join(data_root, 'train'), '--style-image', os.path.join(data_root, 'style.png'),
            '--save-model-dir', os.path.join(data_root, 'models'), '--checkpoint-model-dir', os.path.join(data_root, 'ckpt'),
            '--epochs', '4', '--lr', '1e-2', '--image-size', '32', '--log-interval', '2', '--checkpoint-interval', '2']
    main()
    argv = ['eval', '--content-image', os.path.join(data_root, 'train', 'images', '000.png'),
            '--output-image', os.path.join(data_root, 'out.png'), '--model', trained['path']]
    main()
