# ruff: noqa: B007, E231, E241, E251, E402, E501, E741, F401, F402, F841, N801, N802, N806, UP008, UP010, UP031, UP032 (fxia22's code as is)
"""fxia22/pointnet.pytorch: pointnet/model.py (STN3d, whose identity is added through
torch.from_numpy(np.array([...]).astype(np.float32)).view(1, 9).repeat(batchsize, 1); STNkd;
PointNetfeat with global_feat and feature_transform; PointNetCls; PointNetDenseCls;
feature_transform_regularizer with torch.norm over dim=(1, 2)) and its ``__main__`` shape
checks, then utils/train_classification.py's loop: Adam, StepLR stepped at each epoch's start,
points.transpose(2, 1), F.nll_loss plus 0.001 x the regularizer, pred.data.max(1)[1],
eq(...).cpu().sum(), a test batch every 10 steps, torch.save of the state_dict per epoch and the
final accuracy over the test set.

Changes: model.py, pointnet/dataset.py's ModelNetDataset and train_classification.py are one
script (the import of pointnet.model goes); ModelNet40 is a download, so ModelNetDataset reads
no .ply files: its shapes are the surfaces of a sphere, a cube and a cylinder (200 random
points each, a fixed draw per index), then sampled, centred, scaled and augmented by its own
code (the ShapeNet branch goes: it is a download too); the command line is parsed from a fixed list (--dataset_type modelnet40,
--feature_transform, batch size 16, 64 points, 10 epochs, no workers) and the seed is fixed (1,
not random.randint), with np.random.seed beside it (the dataset samples with NumPy); StepLR's
step_size is 4 (not 20); there is no GPU: the .cuda() calls are commented out; tqdm is not
installed, a pass-through stands in; the model's widths are half of fxia22's (32, 64, 512, 256,
128 for 64, 128, 1024, 512, 256; the feature transform's k=64 is 32, so the dense head's 1088
inputs are 544) to fit the test's time; the ``__main__`` shape checks run on 4 x 3 x 64
random points (not 32 x 3 x 2500). Sections marked "(added)" are not fxia22's: they record the
losses and accuracies, and a fixed-weight model's outputs, loss, gradients, two Adam steps and
BatchNorm statistics to compare with torch.
"""
from __future__ import print_function
import argparse
import os
import random
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.parallel
import jitgrad.optim as optim
import jitgrad.utils.data
import jitgrad.utils.data as data
from jitgrad.autograd import Variable
import numpy as np
import jitgrad.nn.functional as F
# from tqdm import tqdm


def tqdm(iterable):  # (stand-in for tqdm.tqdm: iterates)
    return iterable


# ----------------------------------------------------------------------------- pointnet/model.py


class STN3d(nn.Module):
    def __init__(self):
        super(STN3d, self).__init__()
        self.conv1 = torch.nn.Conv1d(3, 32, 1)
        self.conv2 = torch.nn.Conv1d(32, 64, 1)
        self.conv3 = torch.nn.Conv1d(64, 512, 1)
        self.fc1 = nn.Linear(512, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 9)
        self.relu = nn.ReLU()

        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(64)
        self.bn3 = nn.BatchNorm1d(512)
        self.bn4 = nn.BatchNorm1d(256)
        self.bn5 = nn.BatchNorm1d(128)


    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 512)

        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x)

        iden = Variable(torch.from_numpy(np.array([1,0,0,0,1,0,0,0,1]).astype(np.float32))).view(1,9).repeat(batchsize,1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, 3, 3)
        return x


class STNkd(nn.Module):
    def __init__(self, k=32):
        super(STNkd, self).__init__()
        self.conv1 = torch.nn.Conv1d(k, 32, 1)
        self.conv2 = torch.nn.Conv1d(32, 64, 1)
        self.conv3 = torch.nn.Conv1d(64, 512, 1)
        self.fc1 = nn.Linear(512, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, k*k)
        self.relu = nn.ReLU()

        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(64)
        self.bn3 = nn.BatchNorm1d(512)
        self.bn4 = nn.BatchNorm1d(256)
        self.bn5 = nn.BatchNorm1d(128)

        self.k = k

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 512)

        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x)

        iden = Variable(torch.from_numpy(np.eye(self.k).flatten().astype(np.float32))).view(1,self.k*self.k).repeat(batchsize,1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, self.k, self.k)
        return x

class PointNetfeat(nn.Module):
    def __init__(self, global_feat = True, feature_transform = False):
        super(PointNetfeat, self).__init__()
        self.stn = STN3d()
        self.conv1 = torch.nn.Conv1d(3, 32, 1)
        self.conv2 = torch.nn.Conv1d(32, 64, 1)
        self.conv3 = torch.nn.Conv1d(64, 512, 1)
        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(64)
        self.bn3 = nn.BatchNorm1d(512)
        self.global_feat = global_feat
        self.feature_transform = feature_transform
        if self.feature_transform:
            self.fstn = STNkd(k=32)

    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))

        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = x.transpose(2,1)
            x = torch.bmm(x, trans_feat)
            x = x.transpose(2,1)
        else:
            trans_feat = None

        pointfeat = x
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 512)
        if self.global_feat:
            return x, trans, trans_feat
        else:
            x = x.view(-1, 512, 1).repeat(1, 1, n_pts)
            return torch.cat([x, pointfeat], 1), trans, trans_feat

class PointNetCls(nn.Module):
    def __init__(self, k=2, feature_transform=False):
        super(PointNetCls, self).__init__()
        self.feature_transform = feature_transform
        self.feat = PointNetfeat(global_feat=True, feature_transform=feature_transform)
        self.fc1 = nn.Linear(512, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, k)
        self.dropout = nn.Dropout(p=0.3)
        self.bn1 = nn.BatchNorm1d(256)
        self.bn2 = nn.BatchNorm1d(128)
        self.relu = nn.ReLU()

    def forward(self, x):
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.dropout(self.fc2(x))))
        x = self.fc3(x)
        return F.log_softmax(x, dim=1), trans, trans_feat


class PointNetDenseCls(nn.Module):
    def __init__(self, k = 2, feature_transform=False):
        super(PointNetDenseCls, self).__init__()
        self.k = k
        self.feature_transform=feature_transform
        self.feat = PointNetfeat(global_feat=False, feature_transform=feature_transform)
        self.conv1 = torch.nn.Conv1d(544, 256, 1)
        self.conv2 = torch.nn.Conv1d(256, 128, 1)
        self.conv3 = torch.nn.Conv1d(128, 64, 1)
        self.conv4 = torch.nn.Conv1d(64, self.k, 1)
        self.bn1 = nn.BatchNorm1d(256)
        self.bn2 = nn.BatchNorm1d(128)
        self.bn3 = nn.BatchNorm1d(64)

    def forward(self, x):
        batchsize = x.size()[0]
        n_pts = x.size()[2]
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = self.conv4(x)
        x = x.transpose(2,1).contiguous()
        x = F.log_softmax(x.view(-1,self.k), dim=-1)
        x = x.view(batchsize, n_pts, self.k)
        return x, trans, trans_feat

def feature_transform_regularizer(trans):
    d = trans.size()[1]
    batchsize = trans.size()[0]
    I = torch.eye(d)[None, :, :]
    if trans.is_cuda:
        I = I.cuda()
    loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2,1)) - I, dim=(1,2)))
    return loss

shapes = {}  # (added: the __main__ block's sizes)
if __name__ == '__main__':
    torch.manual_seed(0)  # (added)
    sim_data = Variable(torch.rand(4,3,64))
    trans = STN3d()
    out = trans(sim_data)
    print('stn', out.size())
    print('loss', feature_transform_regularizer(out))
    shapes['stn'] = tuple(out.size())

    sim_data_64d = Variable(torch.rand(4, 32, 64))
    trans = STNkd(k=32)
    out = trans(sim_data_64d)
    print('stn64d', out.size())
    print('loss', feature_transform_regularizer(out))
    shapes['stn64d'] = tuple(out.size())

    pointfeat = PointNetfeat(global_feat=True)
    out, _, _ = pointfeat(sim_data)
    print('global feat', out.size())
    shapes['global feat'] = tuple(out.size())

    pointfeat = PointNetfeat(global_feat=False)
    out, _, _ = pointfeat(sim_data)
    print('point feat', out.size())
    shapes['point feat'] = tuple(out.size())

    cls = PointNetCls(k = 5)
    out, _, _ = cls(sim_data)
    print('class', out.size())
    shapes['class'] = tuple(out.size())

    seg = PointNetDenseCls(k = 3)
    out, _, _ = seg(sim_data)
    print('seg', out.size())
    shapes['seg'] = tuple(out.size())


# -------------------------------------------------------------------------- pointnet/dataset.py


def _surface(name, n, rng):  # (added: a shape's "vertices", points on its surface)
    if name == 'sphere':
        p = rng.normal(size=(n, 3))
        return p / np.linalg.norm(p, axis=1, keepdims=True)
    if name == 'cube':
        p = rng.uniform(-1, 1, size=(n, 3))
        axis = rng.randint(0, 3, size=n)
        p[np.arange(n), axis] = rng.choice([-1.0, 1.0], size=n)
        return p
    theta = rng.uniform(0, 2 * np.pi, size=n)  # a cylinder's side, axis along y
    return np.stack([np.cos(theta), rng.uniform(-1, 1, size=n), np.sin(theta)], 1)


class ModelNetDataset(data.Dataset):
    def __init__(self,
                 root,
                 npoints=2500,
                 split='train',
                 data_augmentation=True):
        self.npoints = npoints
        self.root = root
        self.split = split
        self.data_augmentation = data_augmentation
        self.fns = []
        # (stand-in for the list file: 32 shapes of each class to train on, 16 to test)
        count = 32 if split == 'trainval' else 16
        for name in ['cube', 'cylinder', 'sphere']:
            for i in range(count):
                self.fns.append('%s/%s_%04d.ply' % (name, split, i))

        self.cat = {'cube': 0, 'cylinder': 1, 'sphere': 2}  # (stand-in for misc/modelnet_id.txt)

        print(self.cat)
        self.classes = list(self.cat.keys())

    def __getitem__(self, index):
        fn = self.fns[index]
        cls = self.cat[fn.split('/')[0]]
        # (stand-in for PlyData.read: a fixed draw of the shape's surface per file)
        pts = _surface(fn.split('/')[0], 200, np.random.RandomState(index + (0 if self.split == 'trainval' else 10000)))
        choice = np.random.choice(len(pts), self.npoints, replace=True)
        point_set = pts[choice, :]

        point_set = point_set - np.expand_dims(np.mean(point_set, axis=0), 0)  # center
        dist = np.max(np.sqrt(np.sum(point_set ** 2, axis=1)), 0)
        point_set = point_set / dist  # scale

        if self.data_augmentation:
            theta = np.random.uniform(0, np.pi * 2)
            rotation_matrix = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
            point_set[:, [0, 2]] = point_set[:, [0, 2]].dot(rotation_matrix)  # random rotation
            point_set += np.random.normal(0, 0.02, size=point_set.shape)  # random jitter

        point_set = torch.from_numpy(point_set.astype(np.float32))
        cls = torch.from_numpy(np.array([cls]).astype(np.int64))
        return point_set, cls


    def __len__(self):
        return len(self.fns)


# ----------------------------------------------------------------- utils/train_classification.py

parser = argparse.ArgumentParser()
parser.add_argument(
    '--batchSize', type=int, default=32, help='input batch size')
parser.add_argument(
    '--num_points', type=int, default=2500, help='input batch size')
parser.add_argument(
    '--workers', type=int, help='number of data loading workers', default=4)
parser.add_argument(
    '--nepoch', type=int, default=250, help='number of epochs to train for')
parser.add_argument('--outf', type=str, default='cls', help='output folder')
parser.add_argument('--model', type=str, default='', help='model path')
parser.add_argument('--dataset', type=str, required=True, help="dataset path")
parser.add_argument('--dataset_type', type=str, default='shapenet', help="dataset type shapenet|modelnet40")
parser.add_argument('--feature_transform', action='store_true', help="use feature transform")

opt = parser.parse_args(['--batchSize', '16', '--num_points', '64', '--workers', '0', '--nepoch', '10',
                         '--outf', os.path.join(tempfile.mkdtemp(), 'cls'), '--dataset', '(synthetic)',
                         '--dataset_type', 'modelnet40', '--feature_transform'])  # (a fixed list)
print(opt)

blue = lambda x: '\033[94m' + x + '\033[0m'

opt.manualSeed = 1  # fix seed (not random.randint(1, 10000))
print("Random Seed: ", opt.manualSeed)
random.seed(opt.manualSeed)
torch.manual_seed(opt.manualSeed)
np.random.seed(opt.manualSeed)  # (added)

if opt.dataset_type == 'modelnet40':
    dataset = ModelNetDataset(
        root=opt.dataset,
        npoints=opt.num_points,
        split='trainval')

    test_dataset = ModelNetDataset(
        root=opt.dataset,
        split='test',
        npoints=opt.num_points,
        data_augmentation=False)
else:
    exit('wrong dataset type')


dataloader = torch.utils.data.DataLoader(
    dataset,
    batch_size=opt.batchSize,
    shuffle=True,
    num_workers=int(opt.workers))

testdataloader = torch.utils.data.DataLoader(
        test_dataset,
        batch_size=opt.batchSize,
        shuffle=True,
        num_workers=int(opt.workers))

print(len(dataset), len(test_dataset))
num_classes = len(dataset.classes)
print('classes', num_classes)

try:
    os.makedirs(opt.outf)
except OSError:
    pass

classifier = PointNetCls(k=num_classes, feature_transform=opt.feature_transform)

if opt.model != '':
    classifier.load_state_dict(torch.load(opt.model))


optimizer = optim.Adam(classifier.parameters(), lr=0.001, betas=(0.9, 0.999))
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
# classifier.cuda()

num_batch = len(dataset) / opt.batchSize
losses, accuracies, test_accuracies, lrs = [], [], [], []  # (added)

for epoch in range(opt.nepoch):
    scheduler.step()
    lrs.append(optimizer.param_groups[0]['lr'])  # (added)
    for i, data in enumerate(dataloader, 0):
        points, target = data
        target = target[:, 0]
        points = points.transpose(2, 1)
        # points, target = points.cuda(), target.cuda()
        optimizer.zero_grad()
        classifier = classifier.train()
        pred, trans, trans_feat = classifier(points)
        loss = F.nll_loss(pred, target)
        if opt.feature_transform:
            loss += feature_transform_regularizer(trans_feat) * 0.001
        loss.backward()
        optimizer.step()
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.data).cpu().sum()
        print('[%d: %d/%d] train loss: %f accuracy: %f' % (epoch, i, num_batch, loss.item(), correct.item() / float(opt.batchSize)))
        losses.append(loss.item())  # (added)
        accuracies.append(correct.item() / float(opt.batchSize))  # (added)

        if i % 10 == 0:
            j, data = next(enumerate(testdataloader, 0))
            points, target = data
            target = target[:, 0]
            points = points.transpose(2, 1)
            # points, target = points.cuda(), target.cuda()
            classifier = classifier.eval()
            pred, _, _ = classifier(points)
            loss = F.nll_loss(pred, target)
            pred_choice = pred.data.max(1)[1]
            correct = pred_choice.eq(target.data).cpu().sum()
            print('[%d: %d/%d] %s loss: %f accuracy: %f' % (epoch, i, num_batch, blue('test'), loss.item(), correct.item()/float(opt.batchSize)))
            test_accuracies.append(correct.item() / float(opt.batchSize))  # (added)

    torch.save(classifier.state_dict(), '%s/cls_model_%d.pth' % (opt.outf, epoch))

total_correct = 0
total_testset = 0
for i,data in tqdm(enumerate(testdataloader, 0)):
    points, target = data
    target = target[:, 0]
    points = points.transpose(2, 1)
    # points, target = points.cuda(), target.cuda()
    classifier = classifier.eval()
    pred, _, _ = classifier(points)
    pred_choice = pred.data.max(1)[1]
    correct = pred_choice.eq(target.data).cpu().sum()
    total_correct += correct.item()
    total_testset += points.size()[0]

print("final accuracy {}".format(total_correct / float(total_testset)))


# (added) fixed-weight models (weights drawn by NumPy: jitgrad's random numbers are not torch's;
# the classifier's dropout is off, its masks would come from each library's own random numbers)
# on six test clouds: the classifier's log-probabilities, transforms, loss with the regularizer,
# gradients, two Adam steps under a StepLR, BatchNorm's running statistics and an eval-mode
# pass; the segmentation head's per-point log-probabilities and their gradients. In float64:
# BatchNorm over six clouds and the max over points make the net ill-conditioned (float32 runs of
# either library differ from float64 by 1e-4 of the gradients' scale), and the biases before a
# BatchNorm have zero gradients whose float32 rounding noise Adam would scale to lr-sized steps
def _fixed_weights(model, rng):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                w = rng.normal(0.0, 1.0 / np.sqrt(p[0].numel()), tuple(p.shape))
            else:
                w = rng.normal(1.0 if name.split('.')[-2].startswith('bn') and name.endswith('weight') else 0.0, 0.1, tuple(p.shape))
            p.copy_(torch.tensor(w, dtype=torch.float32))
    return model


_rng = np.random.default_rng(0)
fixed = _fixed_weights(PointNetCls(k=num_classes, feature_transform=True), _rng).double()
fixed.dropout.p = 0.0
fixed_opt = optim.Adam(fixed.parameters(), lr=0.001, betas=(0.9, 0.999))
fixed_sched = optim.lr_scheduler.StepLR(fixed_opt, step_size=1, gamma=0.5)
fixed_points = torch.stack([test_dataset[i][0] for i in (0, 16, 32, 1, 17, 33)]).transpose(2, 1).double()
fixed_target = torch.stack([test_dataset[i][1] for i in (0, 16, 32, 1, 17, 33)])[:, 0]
fixed_results = {'losses': [], 'lrs': []}
for step in range(2):
    fixed_opt.zero_grad()
    fixed = fixed.train()
    pred, trans, trans_feat = fixed(fixed_points)
    reg = feature_transform_regularizer(trans_feat)
    loss = F.nll_loss(pred, fixed_target) + reg * 0.001
    loss.backward()
    if step == 0:
        fixed_results['pred'], fixed_results['trans'] = pred.detach(), trans.detach()
        fixed_results['trans_feat'], fixed_results['reg'] = trans_feat.detach(), reg.item()
        fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
    fixed_opt.step()
    fixed_sched.step()
    fixed_results['losses'].append(loss.item())
    fixed_results['lrs'].append(fixed_opt.param_groups[0]['lr'])
fixed_results['params'] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_results['buffers'] = {n: b.clone() for n, b in fixed.named_buffers()}
fixed = fixed.eval()
pred, _, _ = fixed(fixed_points)
fixed_results['eval_pred'] = pred.detach()
fixed_results['eval_choice'] = pred.data.max(1)[1]
fixed_results['eval_correct'] = pred.data.max(1)[1].eq(fixed_target.data).cpu().sum().item()
fixed_seg = _fixed_weights(PointNetDenseCls(k=4, feature_transform=True), _rng).double()
seg_out, _, seg_trans_feat = fixed_seg(fixed_points)
seg_loss = F.nll_loss(seg_out.view(-1, 4), (torch.arange(6 * opt.num_points) % 4)) + feature_transform_regularizer(seg_trans_feat) * 0.001
seg_loss.backward()
fixed_results['seg_out'], fixed_results['seg_loss'] = seg_out.detach(), seg_loss.item()
fixed_results['seg_grads'] = {n: p.grad.clone() for n, p in fixed_seg.named_parameters()}
