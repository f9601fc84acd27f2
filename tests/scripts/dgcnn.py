# ruff: noqa: E402, E501, F401, F841, N801, N802, N806, UP004, UP008, UP010, UP031, UP039 (Yue Wang's code as is)
"""WangYueFt/dgcnn pytorch/: model.py (knn through a matmul and topk, get_graph_feature's
gather of each point's k neighbours by flat index, the PointNet baseline with
F.adaptive_max_pool1d(x, 1).squeeze(), DGCNN's EdgeConv blocks of Conv2d + BatchNorm2d +
LeakyReLU(0.2), the max over neighbours, F.adaptive_max_pool1d and F.adaptive_avg_pool1d),
util.py (cal_loss: label smoothing with zeros_like(...).scatter(1, gold.view(-1, 1), 1);
IOStream) and main.py's train(): nn.DataParallel, SGD(lr * 100, momentum, weight_decay=1e-4),
CosineAnnealingLR stepped at each epoch's start, sklearn's accuracy_score and
balanced_accuracy_score, torch.save of the best state_dict; then test() reloads it.

Changes: model.py, util.py, data.py and main.py are one script; ModelNet40's HDF5 files are a
download, so load_data returns synthetic clouds (the surfaces of a cube, a cylinder and a
sphere: 24 of each to train, 8 to test, 128 points each) and data.py's own
translate_pointcloud and shuffle augment them; get_graph_feature's idx_base is made on the
input's device (the code names 'cuda'); the command line is parsed from a fixed list (32 points,
k=8, emb_dims 64, batch size 12, 5 epochs, not 1024, 20, 1024, 32 and 250), there are no data
workers, and the checkpoints and log go to a temporary directory (the os.system copies of the
sources are left out); torch.manual_seed(args.seed) is joined by np.random.seed. Sections marked
"(added)" are not Yue Wang's: they record the losses and accuracies, and fixed-weight models'
neighbours, graph features, logits, loss, gradients, SGD steps and BatchNorm statistics (in
float64: BatchNorm over a few clouds makes float32 ill-conditioned) to compare with torch.
"""
from __future__ import print_function
import os
import sys
import copy
import math
import argparse
import tempfile
import numpy as np
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.optim.lr_scheduler import CosineAnnealingLR
from jitgrad.utils.data import DataLoader, Dataset
import sklearn.metrics as metrics


# ------------------------------------------------------------------------------------- data.py


def load_data(partition):  # (stand-in: synthetic clouds, not the HDF5 files)
    rng = np.random.RandomState(0 if partition == 'train' else 1)
    count = 24 if partition == 'train' else 8
    all_data, all_label = [], []
    for label in range(3):
        for _ in range(count):
            if label == 0:  # a cube's faces
                p = rng.uniform(-1, 1, size=(128, 3))
                p[np.arange(128), rng.randint(0, 3, size=128)] = rng.choice([-1.0, 1.0], size=128)
            elif label == 1:  # a cylinder's side
                t = rng.uniform(0, 2 * np.pi, size=128)
                p = np.stack([np.cos(t), rng.uniform(-1, 1, size=128), np.sin(t)], 1)
            else:  # a sphere
                p = rng.normal(size=(128, 3))
                p /= np.linalg.norm(p, axis=1, keepdims=True)
            all_data.append(p)
            all_label.append([label])
    all_data = np.stack(all_data).astype('float32')
    all_label = np.array(all_label).astype('int64')
    return all_data, all_label


def translate_pointcloud(pointcloud):
    xyz1 = np.random.uniform(low=2./3., high=3./2., size=[3])
    xyz2 = np.random.uniform(low=-0.2, high=0.2, size=[3])

    translated_pointcloud = np.add(np.multiply(pointcloud, xyz1), xyz2).astype('float32')
    return translated_pointcloud


def jitter_pointcloud(pointcloud, sigma=0.01, clip=0.02):
    N, C = pointcloud.shape
    pointcloud += np.clip(sigma * np.random.randn(N, C), -1*clip, clip)
    return pointcloud


class ModelNet40(Dataset):
    def __init__(self, num_points, partition='train'):
        self.data, self.label = load_data(partition)
        self.num_points = num_points
        self.partition = partition

    def __getitem__(self, item):
        pointcloud = self.data[item][:self.num_points]
        label = self.label[item]
        if self.partition == 'train':
            pointcloud = translate_pointcloud(pointcloud)
            np.random.shuffle(pointcloud)
        return pointcloud, label

    def __len__(self):
        return self.data.shape[0]


# ------------------------------------------------------------------------------------ model.py


def knn(x, k):
    inner = -2*torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x**2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)

    idx = pairwise_distance.topk(k=k, dim=-1)[1]   # (batch_size, num_points, k)
    return idx


def get_graph_feature(x, k=20, idx=None):
    batch_size = x.size(0)
    num_points = x.size(2)
    x = x.view(batch_size, -1, num_points)
    if idx is None:
        idx = knn(x, k=k)   # (batch_size, num_points, k)
    device = x.device  # (not torch.device('cuda'))

    idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1)*num_points

    idx = idx + idx_base

    idx = idx.view(-1)

    _, num_dims, _ = x.size()

    x = x.transpose(2, 1).contiguous()   # (batch_size, num_points, num_dims)  -> (batch_size*num_points, num_dims) #   batch_size * num_points * k + range(0, batch_size*num_points)
    feature = x.view(batch_size*num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)

    feature = torch.cat((feature-x, x), dim=3).permute(0, 3, 1, 2).contiguous()

    return feature


class PointNet(nn.Module):
    def __init__(self, args, output_channels=40):
        super(PointNet, self).__init__()
        self.args = args
        self.conv1 = nn.Conv1d(3, 64, kernel_size=1, bias=False)
        self.conv2 = nn.Conv1d(64, 64, kernel_size=1, bias=False)
        self.conv3 = nn.Conv1d(64, 64, kernel_size=1, bias=False)
        self.conv4 = nn.Conv1d(64, 128, kernel_size=1, bias=False)
        self.conv5 = nn.Conv1d(128, args.emb_dims, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm1d(64)
        self.bn2 = nn.BatchNorm1d(64)
        self.bn3 = nn.BatchNorm1d(64)
        self.bn4 = nn.BatchNorm1d(128)
        self.bn5 = nn.BatchNorm1d(args.emb_dims)
        self.linear1 = nn.Linear(args.emb_dims, 512, bias=False)
        self.bn6 = nn.BatchNorm1d(512)
        self.dp1 = nn.Dropout()
        self.linear2 = nn.Linear(512, output_channels)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = F.relu(self.bn4(self.conv4(x)))
        x = F.relu(self.bn5(self.conv5(x)))
        x = F.adaptive_max_pool1d(x, 1).squeeze()
        x = F.relu(self.bn6(self.linear1(x)))
        x = self.dp1(x)
        x = self.linear2(x)
        return x


class DGCNN(nn.Module):
    def __init__(self, args, output_channels=40):
        super(DGCNN, self).__init__()
        self.args = args
        self.k = args.k

        self.bn1 = nn.BatchNorm2d(64)
        self.bn2 = nn.BatchNorm2d(64)
        self.bn3 = nn.BatchNorm2d(128)
        self.bn4 = nn.BatchNorm2d(256)
        self.bn5 = nn.BatchNorm1d(args.emb_dims)

        self.conv1 = nn.Sequential(nn.Conv2d(6, 64, kernel_size=1, bias=False),
                                   self.bn1,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv2 = nn.Sequential(nn.Conv2d(64*2, 64, kernel_size=1, bias=False),
                                   self.bn2,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv3 = nn.Sequential(nn.Conv2d(64*2, 128, kernel_size=1, bias=False),
                                   self.bn3,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv4 = nn.Sequential(nn.Conv2d(128*2, 256, kernel_size=1, bias=False),
                                   self.bn4,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv5 = nn.Sequential(nn.Conv1d(512, args.emb_dims, kernel_size=1, bias=False),
                                   self.bn5,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.linear1 = nn.Linear(args.emb_dims*2, 512, bias=False)
        self.bn6 = nn.BatchNorm1d(512)
        self.dp1 = nn.Dropout(p=args.dropout)
        self.linear2 = nn.Linear(512, 256)
        self.bn7 = nn.BatchNorm1d(256)
        self.dp2 = nn.Dropout(p=args.dropout)
        self.linear3 = nn.Linear(256, output_channels)

    def forward(self, x):
        batch_size = x.size(0)
        x = get_graph_feature(x, k=self.k)
        x = self.conv1(x)
        x1 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x1, k=self.k)
        x = self.conv2(x)
        x2 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x2, k=self.k)
        x = self.conv3(x)
        x3 = x.max(dim=-1, keepdim=False)[0]

        x = get_graph_feature(x3, k=self.k)
        x = self.conv4(x)
        x4 = x.max(dim=-1, keepdim=False)[0]

        x = torch.cat((x1, x2, x3, x4), dim=1)

        x = self.conv5(x)
        x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
        x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
        x = torch.cat((x1, x2), 1)

        x = F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2)
        x = self.dp1(x)
        x = F.leaky_relu(self.bn7(self.linear2(x)), negative_slope=0.2)
        x = self.dp2(x)
        x = self.linear3(x)
        return x


# ------------------------------------------------------------------------------------- util.py


def cal_loss(pred, gold, smoothing=True):
    ''' Calculate cross entropy loss, apply label smoothing if needed. '''

    gold = gold.contiguous().view(-1)

    if smoothing:
        eps = 0.2
        n_class = pred.size(1)

        one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
        one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
        log_prb = F.log_softmax(pred, dim=1)

        loss = -(one_hot * log_prb).sum(dim=1).mean()
    else:
        loss = F.cross_entropy(pred, gold, reduction='mean')

    return loss


class IOStream():
    def __init__(self, path):
        self.f = open(path, 'a')

    def cprint(self, text):
        print(text)
        self.f.write(text+'\n')
        self.f.flush()

    def close(self):
        self.f.close()


# ------------------------------------------------------------------------------------- main.py

ROOT = tempfile.mkdtemp()  # (the checkpoints' directory goes here)


def _init_():
    if not os.path.exists(ROOT + '/checkpoints'):
        os.makedirs(ROOT + '/checkpoints')
    if not os.path.exists(ROOT + '/checkpoints/'+args.exp_name):
        os.makedirs(ROOT + '/checkpoints/'+args.exp_name)
    if not os.path.exists(ROOT + '/checkpoints/'+args.exp_name+'/'+'models'):
        os.makedirs(ROOT + '/checkpoints/'+args.exp_name+'/'+'models')


history = {'train_loss': [], 'train_acc': [], 'test_acc': [], 'test_avg_acc': [], 'lr': []}  # (added)


def train(args, io):
    train_loader = DataLoader(ModelNet40(partition='train', num_points=args.num_points), num_workers=0,
                              batch_size=args.batch_size, shuffle=True, drop_last=True)
    test_loader = DataLoader(ModelNet40(partition='test', num_points=args.num_points), num_workers=0,
                             batch_size=args.test_batch_size, shuffle=True, drop_last=False)

    device = torch.device("cuda" if args.cuda else "cpu")

    #Try to load models
    if args.model == 'pointnet':
        model = PointNet(args).to(device)
    elif args.model == 'dgcnn':
        model = DGCNN(args).to(device)
    else:
        raise Exception("Not implemented")
    print(str(model))

    model = nn.DataParallel(model)
    print("Let's use", torch.cuda.device_count(), "GPUs!")

    if args.use_sgd:
        print("Use SGD")
        opt = optim.SGD(model.parameters(), lr=args.lr*100, momentum=args.momentum, weight_decay=1e-4)
    else:
        print("Use Adam")
        opt = optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-4)

    scheduler = CosineAnnealingLR(opt, args.epochs, eta_min=args.lr)

    criterion = cal_loss

    best_test_acc = 0
    for epoch in range(args.epochs):
        scheduler.step()
        history['lr'].append(opt.param_groups[0]['lr'])  # (added)
        ####################
        # Train
        ####################
        train_loss = 0.0
        count = 0.0
        model.train()
        train_pred = []
        train_true = []
        for data, label in train_loader:
            data, label = data.to(device), label.to(device).squeeze()
            data = data.permute(0, 2, 1)
            batch_size = data.size()[0]
            opt.zero_grad()
            logits = model(data)
            loss = criterion(logits, label)
            loss.backward()
            opt.step()
            preds = logits.max(dim=1)[1]
            count += batch_size
            train_loss += loss.item() * batch_size
            train_true.append(label.cpu().numpy())
            train_pred.append(preds.detach().cpu().numpy())
        train_true = np.concatenate(train_true)
        train_pred = np.concatenate(train_pred)
        outstr = 'Train %d, loss: %.6f, train acc: %.6f, train avg acc: %.6f' % (epoch,
                                                                                 train_loss*1.0/count,
                                                                                 metrics.accuracy_score(
                                                                                     train_true, train_pred),
                                                                                 metrics.balanced_accuracy_score(
                                                                                     train_true, train_pred))
        io.cprint(outstr)
        history['train_loss'].append(train_loss * 1.0 / count)  # (added)
        history['train_acc'].append(metrics.accuracy_score(train_true, train_pred))  # (added)

        ####################
        # Test
        ####################
        test_loss = 0.0
        count = 0.0
        model.eval()
        test_pred = []
        test_true = []
        for data, label in test_loader:
            data, label = data.to(device), label.to(device).squeeze()
            data = data.permute(0, 2, 1)
            batch_size = data.size()[0]
            logits = model(data)
            loss = criterion(logits, label)
            preds = logits.max(dim=1)[1]
            count += batch_size
            test_loss += loss.item() * batch_size
            test_true.append(label.cpu().numpy())
            test_pred.append(preds.detach().cpu().numpy())
        test_true = np.concatenate(test_true)
        test_pred = np.concatenate(test_pred)
        test_acc = metrics.accuracy_score(test_true, test_pred)
        avg_per_class_acc = metrics.balanced_accuracy_score(test_true, test_pred)
        outstr = 'Test %d, loss: %.6f, test acc: %.6f, test avg acc: %.6f' % (epoch,
                                                                              test_loss*1.0/count,
                                                                              test_acc,
                                                                              avg_per_class_acc)
        io.cprint(outstr)
        history['test_acc'].append(test_acc)  # (added)
        history['test_avg_acc'].append(avg_per_class_acc)  # (added)
        if test_acc >= best_test_acc:
            best_test_acc = test_acc
            torch.save(model.state_dict(), ROOT + '/checkpoints/%s/models/model.t7' % args.exp_name)
    return model  # (added)


def test(args, io):
    test_loader = DataLoader(ModelNet40(partition='test', num_points=args.num_points),
                             batch_size=args.test_batch_size, shuffle=True, drop_last=False)

    device = torch.device("cuda" if args.cuda else "cpu")

    #Try to load models
    model = DGCNN(args).to(device)
    model = nn.DataParallel(model)
    model.load_state_dict(torch.load(args.model_path))
    model = model.eval()
    test_acc = 0.0
    count = 0.0
    test_true = []
    test_pred = []
    for data, label in test_loader:

        data, label = data.to(device), label.to(device).squeeze()
        data = data.permute(0, 2, 1)
        batch_size = data.size()[0]
        logits = model(data)
        preds = logits.max(dim=1)[1]
        test_true.append(label.cpu().numpy())
        test_pred.append(preds.detach().cpu().numpy())
    test_true = np.concatenate(test_true)
    test_pred = np.concatenate(test_pred)
    test_acc = metrics.accuracy_score(test_true, test_pred)
    avg_per_class_acc = metrics.balanced_accuracy_score(test_true, test_pred)
    outstr = 'Test :: test acc: %.6f, test avg acc: %.6f'%(test_acc, avg_per_class_acc)
    io.cprint(outstr)
    return test_acc  # (added)


if __name__ == "__main__":
    # Training settings
    parser = argparse.ArgumentParser(description='Point Cloud Recognition')
    parser.add_argument('--exp_name', type=str, default='exp', metavar='N',
                        help='Name of the experiment')
    parser.add_argument('--model', type=str, default='dgcnn', metavar='N',
                        choices=['pointnet', 'dgcnn'],
                        help='Model to use, [pointnet, dgcnn]')
    parser.add_argument('--dataset', type=str, default='modelnet40', metavar='N',
                        choices=['modelnet40'])
    parser.add_argument('--batch_size', type=int, default=32, metavar='batch_size',
                        help='Size of batch)')
    parser.add_argument('--test_batch_size', type=int, default=16, metavar='batch_size',
                        help='Size of batch)')
    parser.add_argument('--epochs', type=int, default=250, metavar='N',
                        help='number of episode to train ')
    parser.add_argument('--use_sgd', type=bool, default=True,
                        help='Use SGD')
    parser.add_argument('--lr', type=float, default=0.001, metavar='LR',
                        help='learning rate (default: 0.001, 0.1 if using sgd)')
    parser.add_argument('--momentum', type=float, default=0.9, metavar='M',
                        help='SGD momentum (default: 0.9)')
    parser.add_argument('--no_cuda', type=bool, default=False,
                        help='enables CUDA training')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--eval', type=bool,  default=False,
                        help='evaluate the model')
    parser.add_argument('--num_points', type=int, default=1024,
                        help='num of points to use')
    parser.add_argument('--dropout', type=float, default=0.5,
                        help='dropout rate')
    parser.add_argument('--emb_dims', type=int, default=1024, metavar='N',
                        help='Dimension of embeddings')
    parser.add_argument('--k', type=int, default=20, metavar='N',
                        help='Num of nearest neighbors to use')
    parser.add_argument('--model_path', type=str, default='', metavar='N',
                        help='Pretrained model path')
    args = parser.parse_args(['--num_points', '24', '--k', '6', '--emb_dims', '64', '--batch_size', '12',
                              '--test_batch_size', '12', '--epochs', '8'])  # (a fixed list)

    _init_()

    io = IOStream(ROOT + '/checkpoints/' + args.exp_name + '/run.log')
    io.cprint(str(args))

    args.cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)  # (added)
    if args.cuda:
        io.cprint(
            'Using GPU : ' + str(torch.cuda.current_device()) + ' from ' + str(torch.cuda.device_count()) + ' devices')
        torch.cuda.manual_seed(args.seed)
    else:
        io.cprint('Using CPU')

    if not args.eval:
        trained = train(args, io)  # (added: kept)
    else:
        test(args, io)
    args.model_path = ROOT + '/checkpoints/%s/models/model.t7' % args.exp_name  # (added: test() on
    reloaded_acc = test(args, io)  # the best checkpoint, as --eval would run it)

    # (added) fixed-weight models (weights drawn by NumPy: jitgrad's random numbers are not
    # torch's; no dropout) on six test clouds, in float64: the neighbours and graph features, the
    # DGCNN's logits, cal_loss, gradients, two SGD steps under the cosine schedule, BatchNorm's
    # statistics and an eval-mode pass; the PointNet baseline's eval logits and plain loss
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
    fixed_args = copy.copy(args)
    fixed_args.k, fixed_args.emb_dims, fixed_args.dropout = 4, 16, 0.0
    fixed = nn.DataParallel(_fixed_weights(DGCNN(fixed_args, output_channels=3), _rng)).double()
    fixed_data = torch.from_numpy(load_data('test')[0][[0, 8, 16, 1, 9, 17], :16]).double().permute(0, 2, 1)
    fixed_label = torch.tensor([0, 1, 2, 0, 1, 2])
    fixed_results = {'idx': knn(fixed_data, k=4), 'graph_feature': get_graph_feature(fixed_data, k=4),
                     'keys': list(fixed.state_dict()), 'losses': [], 'lrs': []}
    fixed_opt = optim.SGD(fixed.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fixed_sched = CosineAnnealingLR(fixed_opt, 2, eta_min=0.001)
    for step in range(2):
        fixed.train()
        fixed_opt.zero_grad()
        logits = fixed(fixed_data)
        loss = cal_loss(logits, fixed_label)
        loss.backward()
        if step == 0:
            fixed_results['logits'] = logits.detach()
            fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
        fixed_opt.step()
        fixed_sched.step()
        fixed_results['losses'].append(loss.item())
        fixed_results['lrs'].append(fixed_opt.param_groups[0]['lr'])
    fixed_results['params'] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
    fixed_results['buffers'] = {n: b.clone() for n, b in fixed.named_buffers()}
    fixed.eval()
    fixed_results['eval_logits'] = fixed(fixed_data).detach()
    fixed_pointnet = _fixed_weights(PointNet(fixed_args, output_channels=3), _rng).double().eval()
    fixed_results['pointnet_logits'] = fixed_pointnet(fixed_data).detach()
    fixed_results['pointnet_loss'] = cal_loss(fixed_results['pointnet_logits'], fixed_label, smoothing=False).item()
