# ruff: noqa: A002, E231, E261, E501, N801, N806, UP004, UP008, UP010, UP030, UP032 (tutorial code as is)
"""pytorch/tutorials advanced_source/neural_style_tutorial.py: content and style losses as
transparent modules (gram matrices), a Normalization module, the loss model built by walking a
CNN's children with copy.deepcopy and add_module, the trim after the last loss layer, and
L-BFGS on the image itself with a closure that clamps ``input_img.data``.

Changes: the pretrained VGG19 (a download) is replaced by a small VGG-style ``features``
Sequential (conv 3->8->8, pool, 8->16->16, pool, 16->16, with in-place ReLUs) whose weights are
set from ``linspace`` (so torch's run of the script computes the same numbers); the two JPEGs
by 32 x 32 synthetic images (stripes for the style, a soft disc for the content); PIL,
torchvision's transforms and matplotlib by small stand-ins; 20 L-BFGS evaluations instead of
300; the losses of every closure call are recorded."""
from __future__ import print_function

import math

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim

import copy


class plt:  # (stand-in for matplotlib.pyplot: records what would be shown)
    shown = []

    @staticmethod
    def imshow(image):
        plt.shown.append(tuple(image.shape))

    ion = ioff = show = figure = staticmethod(lambda *a, **k: None)
    title = pause = staticmethod(lambda *a, **k: None)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# desired size of the output image
imsize = 32


def image_loader(kind):  # (the tutorial reads a JPEG through PIL and transforms.ToTensor)
    y, x = torch.meshgrid(torch.linspace(0, 1, imsize), torch.linspace(0, 1, imsize),
                          indexing="ij")
    if kind == "style":
        channels = [0.5 + 0.5 * torch.sin(2 * math.pi * (4 * x + k * y)) for k in range(3)]
    else:
        disc = torch.exp(-((x - 0.5) ** 2 + (y - 0.45) ** 2) / 0.05)
        channels = [disc, disc * 0.6, 1 - disc]
    image = torch.stack(channels).unsqueeze(0)
    return image.to(device, torch.float)


style_img = image_loader("style")
content_img = image_loader("content")

assert style_img.size() == content_img.size(), \
    "we need to import style and content images of the same size"

unloader = lambda t: t.permute(1, 2, 0)  # (transforms.ToPILImage: CHW -> HWC)

plt.ion()

def imshow(tensor, title=None):
    image = tensor.cpu().clone()  # we clone the tensor to not do changes on it
    image = image.squeeze(0)      # remove the fake batch dimension
    image = unloader(image)
    plt.imshow(image)
    if title is not None:
        plt.title(title)
    plt.pause(0.001) # pause a bit so that plots are updated


plt.figure()
imshow(style_img, title='Style Image')

plt.figure()
imshow(content_img, title='Content Image')


class ContentLoss(nn.Module):

    def __init__(self, target,):
        super(ContentLoss, self).__init__()
        # we 'detach' the target content from the tree used
        # to dynamically compute the gradient: this is a stated value,
        # not a variable. Otherwise the forward method of the criterion
        # will throw an error.
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()  # a=batch size(=1)
    # b=number of feature maps
    # (c,d)=dimensions of a f. map (N=c*d)

    features = input.view(a * b, c * d)  # resize F_XL into \hat F_XL

    G = torch.mm(features, features.t())  # compute the gram product

    # we 'normalize' the values of the gram matrix
    # by dividing by the number of element in each feature maps.
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):

    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class models:  # (torchvision.models.vgg19, small and without pretrained weights)
    class _VGG(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
                nn.MaxPool2d(2, 2),
                nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
                nn.MaxPool2d(2, 2),
                nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
            )
            with torch.no_grad():
                for i, p in enumerate(self.features.parameters()):
                    fan_in = p[0].numel() if p.dim() > 1 else 1
                    p.copy_(torch.linspace(-1, 1, p.numel()).mul(7.3 * (i + 1)).sin()
                            .view_as(p) / fan_in ** 0.5)

    @staticmethod
    def vgg19(pretrained=False):
        return models._VGG()


cnn = models.vgg19(pretrained=True).features.to(device).eval()

cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406]).to(device)
cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225]).to(device)

# create a module to normalize input image so we can easily put it in a
# nn.Sequential
class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        # .view the mean and std to make them [C x 1 x 1] so that they can
        # directly work with image Tensor of shape [B x C x H x W].
        # B is batch size. C is number of channels. H is height and W is width.
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        # normalize img
        return (img - self.mean) / self.std


# desired depth layers to compute style/content losses :
content_layers_default = ['conv_4']
style_layers_default = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5']

def get_style_model_and_losses(cnn, normalization_mean, normalization_std,
                               style_img, content_img,
                               content_layers=content_layers_default,
                               style_layers=style_layers_default):
    cnn = copy.deepcopy(cnn)

    # normalization module
    normalization = Normalization(normalization_mean, normalization_std).to(device)

    # just in order to have an iterable access to or list of content/syle
    # losses
    content_losses = []
    style_losses = []

    # assuming that cnn is a nn.Sequential, so we make a new nn.Sequential
    # to put in modules that are supposed to be activated sequentially
    model = nn.Sequential(normalization)

    i = 0  # increment every time we see a conv
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = 'conv_{}'.format(i)
        elif isinstance(layer, nn.ReLU):
            name = 'relu_{}'.format(i)
            # The in-place version doesn't play very nicely with the ContentLoss
            # and StyleLoss we insert below. So we replace with out-of-place
            # ones here.
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = 'pool_{}'.format(i)
        elif isinstance(layer, nn.BatchNorm2d):
            name = 'bn_{}'.format(i)
        else:
            raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))

        model.add_module(name, layer)

        if name in content_layers:
            # add content loss:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)

        if name in style_layers:
            # add style loss:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)

    # now we trim off the layers after the last content and style losses
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break

    model = model[:(i + 1)]

    return model, style_losses, content_losses


input_img = content_img.clone()
# if you want to use white noise instead uncomment the below line:
# input_img = torch.randn(content_img.data.size(), device=device)

# add the original input image to the figure:
plt.figure()
imshow(input_img, title='Input Image')


def get_input_optimizer(input_img):
    # this line to show that input is a parameter that requires a gradient
    optimizer = optim.LBFGS([input_img.requires_grad_()])
    return optimizer


history = []

def run_style_transfer(cnn, normalization_mean, normalization_std,
                       content_img, style_img, input_img, num_steps=20,
                       style_weight=1000000, content_weight=1):
    """Run the style transfer."""
    global model_layers
    print('Building the style transfer model..')
    model, style_losses, content_losses = get_style_model_and_losses(cnn,
        normalization_mean, normalization_std, style_img, content_img)
    model_layers = [name for name, _ in model.named_children()]
    optimizer = get_input_optimizer(input_img)

    print('Optimizing..')
    run = [0]
    while run[0] <= num_steps:

        def closure():
            # correct the values of updated input image
            input_img.data.clamp_(0, 1)

            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0

            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss

            style_score *= style_weight
            content_score *= content_weight

            loss = style_score + content_score
            loss.backward()
            history.append((style_score.item(), content_score.item()))

            run[0] += 1
            if run[0] % 50 == 0:
                print("run {}:".format(run))
                print('Style Loss : {:4f} Content Loss: {:4f}'.format(
                    style_score.item(), content_score.item()))
                print()

            return style_score + content_score

        optimizer.step(closure)

    # a last correction...
    input_img.data.clamp_(0, 1)

    return input_img


output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std,
                            content_img, style_img, input_img)

plt.figure()
imshow(output, title='Output Image')

# sphinx_gallery_thumbnail_number = 4
plt.ioff()
plt.show()
output_range = (output.min().item(), output.max().item())
